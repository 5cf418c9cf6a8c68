package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"

	"github.com/sfsweep/sfsweep/web"
)

// pageFlags are the flags of the sweep page, shared by run and serve.
type pageFlags struct {
	addr, token string
	url         string // the page's address, once started
}

func (p *pageFlags) register(fs *flag.FlagSet, addr string) {
	fs.StringVar(&p.addr, "page", addr, "address of the sweep page (host:port; beyond loopback it needs -page-token); \"off\": none")
	fs.StringVar(&p.token, "page-token", os.Getenv("SFSWEEP_PAGE_TOKEN"), "bearer token the sweep page requires (needed beyond loopback) [SFSWEEP_PAGE_TOKEN]")
}

// check refuses an address that is not host:port (or off), and one beyond loopback
// without a token, before anything starts.
func (p *pageFlags) check() error {
	if p.addr == "off" || p.addr == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(p.addr); err != nil {
		return &usageError{msg: fmt.Sprintf("-page = %q: %v (want host:port, or off)", p.addr, err)}
	}
	if !web.IsLoopback(p.addr) && p.token == "" {
		return &usageError{msg: fmt.Sprintf("-page = %q: beyond loopback the page needs a token (-page-token or SFSWEEP_PAGE_TOKEN)", p.addr)}
	}
	return nil
}

// start serves the sweep page of store (and of the Temporal client c, if set) and
// prints its address; stop ends it. An "off" address serves nothing.
func (p *pageFlags) start(ctx context.Context, opt web.Options, stderr io.Writer) (stop func(), err error) {
	if p.addr == "off" || p.addr == "" {
		return func() {}, nil
	}
	opt.Token = p.token
	s, err := web.New(opt)
	if err != nil {
		return nil, err
	}
	u, stop, err := web.Listen(ctx, p.addr, s)
	if err != nil {
		return nil, fmt.Errorf("-page = %q: %w", p.addr, err)
	}
	fmt.Fprintf(stderr, "Sweep page: %s\n", u)
	p.url = u
	return stop, nil
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", stderr)
	var r remote
	r.flags(fs)
	var pf pageFlags
	pf.register(fs, "127.0.0.1:8080")
	dir := fs.String("dir", ".sfsweep", "without -s3-bucket: the state directory of sfsweep run whose sweeps are served, from its objects alone (no Temporal)")
	ui := fs.String("temporal-ui", os.Getenv("SFSWEEP_TEMPORAL_UI"), "base URL of Temporal's Web UI, to link each trial to its workflow [SFSWEEP_TEMPORAL_UI]")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: sfsweep serve [flags] [NAME|SWEEP-ID]\n\nServes the sweep page: the sweeps of the S3 bucket with their live state from Temporal, or without -s3-bucket those of sfsweep run's state directory. Given a sweep, by its name or ID, it also prints the address of that sweep's page.")
		fs.PrintDefaults()
	}
	name, err := parseWithOptionalArg(fs, args, "one sweep, by its name or ID")
	if err != nil {
		return err
	}
	if pf.addr == "off" {
		return &usageError{msg: "-page = off: serve has nothing else to do"}
	}
	if err := pf.check(); err != nil {
		return err
	}
	if r.s3.Bucket != "" {
		if err := r.checkEnv(); err != nil { // before the store: nothing is reached
			return err
		}
	}
	store, closeStore, err := openResults(ctx, &r, *dir)
	if err != nil {
		return err
	}
	defer closeStore()
	opt := web.Options{Store: store, Log: slog.New(slog.NewTextHandler(stderr, nil))}
	if r.s3.Bucket != "" {
		c, err := r.dial(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		opt.Temporal, opt.UI, opt.Namespace = c, *ui, r.temporal.Namespace
	}
	sweep := ""
	if name != "" {
		if sweep, err = localSweepID(ctx, store, *dir, name); err != nil {
			return err
		}
	}
	stop, err := pf.start(ctx, opt, stderr)
	if err != nil {
		return err
	}
	defer stop()
	if sweep != "" {
		u, err := url.Parse(pf.url)
		if err != nil {
			return err
		}
		u.Path = "/sweeps/" + url.PathEscape(sweep)
		fmt.Fprintf(stderr, "Sweep page of %s: %s\n", name, u)
	}
	<-ctx.Done()
	return nil
}
