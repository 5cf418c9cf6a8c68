package web

import (
	"context"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/training"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// Options configure a Server.
type Options struct {
	// Store holds the sweeps: manifests, trials, tables and plots.
	Store blob.Store
	// Temporal, if set, gives the live state of running sweeps; nil: the store alone.
	Temporal client.Client
	// Namespace and UI make each trial a link to its workflow in Temporal's Web UI (UI is
	// its base URL, such as http://127.0.0.1:8233; empty: no links).
	Namespace, UI string
	// Steps, if set, gives the step of a trial training in this process, fresher than
	// the heartbeats Temporal keeps.
	Steps func(trialID string) (training.Progress, bool)
	// Token, if set, is the bearer token every request must carry (an Authorization
	// header, or a cookie set by opening a page with ?token=).
	Token string
	// Poll is how often a live page refreshes itself (0: 2 s).
	Poll time.Duration
	Log  *slog.Logger
}

// Server serves the sweep pages.
type Server struct {
	opt  Options
	tmpl *template.Template
	mux  *http.ServeMux

	mu        sync.Mutex
	seen      map[string]map[string]bool  // by sweep: trials seen in flight
	cache     map[string]cachedIndex      // by sweep: an index computed from results, briefly kept
	indexes   map[string]storedIndex      // by output: the last index read, decoded
	manifests map[string]*sweeps.Manifest // by sweep: its manifest (an ID is the hash of its bytes)
	listed    []string                    // the sweeps in the store, as last listed
	listedAt  time.Time
}

// New returns a Server of opt.
func New(opt Options) (*Server, error) {
	if opt.Store == nil {
		return nil, errors.New("web: Options.Store is nil")
	}
	if opt.Poll <= 0 {
		opt.Poll = 2 * time.Second
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	tmpl, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("web: templates: %w", err)
	}
	s := &Server{opt: opt, tmpl: tmpl, mux: http.NewServeMux(), seen: map[string]map[string]bool{}, cache: map[string]cachedIndex{},
		indexes: map[string]storedIndex{}, manifests: map[string]*sweeps.Manifest{}}
	assets, _ := fs.Sub(assetFS, "assets")
	s.mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(assets)))
	s.mux.HandleFunc("GET /{$}", s.handleList)
	s.mux.HandleFunc("GET /live", s.handleListLive)
	s.mux.HandleFunc("GET /sweeps/{id}", s.handleSweep)
	s.mux.HandleFunc("GET /sweeps/{id}/live", s.handleSweepLive)
	s.mux.HandleFunc("GET /sweeps/{id}/results", s.handleResults)
	s.mux.HandleFunc("GET /sweeps/{id}/curves", s.handleCurves)
	s.mux.HandleFunc("GET /sweeps/{id}/files/{kind}/{name}", s.handleFile)
	s.mux.HandleFunc("GET /sweeps/{id}/trials/{trial}", s.handleTrial)
	s.mux.HandleFunc("GET /sweeps/{id}/trials/{trial}/live", s.handleTrialLive)
	s.mux.HandleFunc("GET /sweeps/{id}/trials/{trial}/files/{name...}", s.handleTrialFile)
	return s, nil
}

// ServeHTTP serves a request: with the token checked when one is set, and headers that
// keep the page to its own script and style.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	if s.opt.Token != "" && !s.authorized(w, r) {
		return
	}
	s.mux.ServeHTTP(w, r)
}

const tokenCookie = "sfsweep_token"

// authorized checks a request's token; a valid ?token= sets the cookie and redirects to
// the same address without it, so the token stays out of the history and of links.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	same := func(got string) bool { return subtle.ConstantTimeCompare([]byte(got), []byte(s.opt.Token)) == 1 }
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && same(tok) {
		return true
	}
	if c, err := r.Cookie(tokenCookie); err == nil && same(c.Value) {
		return true
	}
	if q := r.URL.Query(); q.Has("token") && same(q.Get("token")) {
		http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: s.opt.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		q.Del("token")
		u := *r.URL
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return false
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="sfsweep"`)
	http.Error(w, "a bearer token is required: open the address sfsweep printed, with its ?token=", http.StatusUnauthorized)
	return false
}

// sweepIDPattern is what keys.SweepID makes: sweep-<name>-<8 hex digits>; a name is plain.
var sweepIDPattern = regexp.MustCompile(`^sweep-[A-Za-z0-9][A-Za-z0-9._-]*-[0-9a-f]{8}$`)

// fileNamePattern is a table's or a plot's file name: one path segment.
var fileNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*\.(md|csv|tex|json|png|svg|pdf)$`)

// trialIDPattern is a trial's ID (sweeps.IDLen hex digits).
var trialIDPattern = regexp.MustCompile(`^[0-9a-f]{16}$`)

// IsLoopback reports whether addr (host:port) listens on loopback only.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Listen serves h on addr until ctx ends; beyond loopback it refuses to start without a
// token. It returns the page's address (with the token, for the one who started it) and
// a function that stops the server.
func Listen(ctx context.Context, addr string, s *Server) (pageURL string, stop func(), err error) {
	if !IsLoopback(addr) && s.opt.Token == "" {
		return "", nil, fmt.Errorf("web: listen %s: beyond loopback the page needs a token (-page-token or SFSWEEP_PAGE_TOKEN)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("web: %w", err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.opt.Log.Error("sweep page", "err", err)
		}
	}()
	stopped := make(chan struct{})
	var once sync.Once
	stop = func() {
		once.Do(func() {
			close(stopped)
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		})
	}
	go func() {
		select {
		case <-ctx.Done():
			stop()
		case <-stopped:
		}
	}()
	u := url.URL{Scheme: "http", Host: ln.Addr().String(), Path: "/"}
	if s.opt.Token != "" {
		u.RawQuery = url.Values{"token": {s.opt.Token}}.Encode()
	}
	return u.String(), stop, nil
}
