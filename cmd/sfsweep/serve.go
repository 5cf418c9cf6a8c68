package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"

	"github.com/sfsweep/sfsweep/web"
)

// pageFlags are the flags of the sweep page, shared by run and serve.
type pageFlags struct {
	addr, token string
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
		fmt.Fprintln(stderr, "Usage: sfsweep serve [flags]\n\nServes the sweep page: the sweeps of the S3 bucket with their live state from Temporal, or without -s3-bucket those of sfsweep run's state directory.")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
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
	stop, err := pf.start(ctx, opt, stderr)
	if err != nil {
		return err
	}
	defer stop()
	<-ctx.Done()
	return nil
}
