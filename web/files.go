package web

// The files of a sweep's output: its tables in every format, its plots as PNG, SVG and PDF.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
)

// file is one download.
type file struct {
	Format string // md, csv, tex, json, png, svg
	URL    string
}

// plot is a plot of the sweep: its name and its files.
type plot struct {
	Name  string
	Title string
	SVG   string // the address the page shows it from ("" if only PNG)
	PNG   string
	Files []file
}

// contentTypes are the types of the files served, by extension.
var contentTypes = map[string]string{
	".md": "text/markdown; charset=utf-8", ".csv": "text/csv; charset=utf-8", ".tex": "text/x-tex; charset=utf-8",
	".json": "application/json", ".png": "image/png", ".svg": "image/svg+xml", ".pdf": "application/pdf",
}

// fileKinds are the folders of an output the page serves.
var fileKinds = map[string]func(output string) string{"tables": keys.TablesDir, "plots": keys.PlotsDir}

// fileURL is the address of a file of a sweep's output.
func fileURL(sweep, kind, name, version string) string {
	u := "/sweeps/" + sweep + "/files/" + kind + "/" + name
	return u + "?v=" + url.QueryEscape(version)
}

// outputFiles lists a sweep's tables and plots, each grouped by name with its formats in
// the order of formats.
func (s *Server) outputFiles(ctx context.Context, d *sweepData, kind string, formats []string) (names []string, byName map[string][]string, err error) {
	dir := fileKinds[kind](d.Output)
	listed, err := s.opt.Store.List(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	byName = map[string][]string{}
	for _, k := range listed {
		name := strings.TrimPrefix(k, dir)
		if !fileNamePattern.MatchString(name) {
			continue
		}
		ext := strings.TrimPrefix(path.Ext(name), ".")
		if !slices.Contains(formats, ext) {
			continue
		}
		base := strings.TrimSuffix(name, "."+ext)
		if _, ok := byName[base]; !ok {
			names = append(names, base)
		}
		byName[base] = append(byName[base], ext)
	}
	slices.Sort(names)
	for _, n := range names {
		slices.SortFunc(byName[n], func(a, b string) int { return slices.Index(formats, a) - slices.Index(formats, b) })
	}
	return names, byName, nil
}

// tableFormats and plotFormats are the formats a table and a plot come in, in the order
// the page lists them.
var (
	tableFormats = []string{"md", "csv", "tex", "json"}
	plotFormats  = []string{"svg", "png", "pdf"}
)

// tablesAndPlots reads a sweep's tables (parsed from their Markdown) and lists its plots;
// a table's heat map goes with its table.
func (s *Server) tablesAndPlots(ctx context.Context, d *sweepData) (tables []table, plots []plot, err error) {
	tnames, tfiles, err := s.outputFiles(ctx, d, "tables", tableFormats)
	if err != nil {
		return nil, nil, err
	}
	pnames, pfiles, err := s.outputFiles(ctx, d, "plots", plotFormats)
	if err != nil {
		return nil, nil, err
	}
	byName := map[string]*plot{}
	for _, n := range pnames {
		p := &plot{Name: n, Title: plotTitle(n)}
		for _, f := range pfiles[n] {
			u := fileURL(d.ID, "plots", n+"."+f, d.Built)
			p.Files = append(p.Files, file{Format: f, URL: u})
			switch f {
			case "svg":
				p.SVG = u
			case "png":
				p.PNG = u
			}
		}
		byName[n] = p
	}
	for _, n := range tnames {
		t := table{Name: n}
		if slices.Contains(tfiles[n], "md") {
			b, err := s.opt.Store.Get(ctx, keys.Table(d.Output, n, "md"))
			if err != nil && !errors.Is(err, blob.ErrNotFound) {
				return nil, nil, err
			}
			t = parseTable(string(b))
			t.Name = n
		}
		for _, f := range tfiles[n] {
			t.Files = append(t.Files, file{Format: f, URL: fileURL(d.ID, "tables", n+"."+f, d.Built)})
		}
		if hm, ok := byName[n+"-heatmap"]; ok {
			t.HeatMap = hm
			delete(byName, n+"-heatmap")
		}
		tables = append(tables, t)
	}
	for _, n := range plotOrder(pnames) {
		if p, ok := byName[n]; ok {
			plots = append(plots, *p)
		}
	}
	return tables, plots, nil
}

// plotOrder puts the curves first, then the probes, then the rest (a search's plots).
func plotOrder(names []string) []string {
	rank := func(n string) int {
		switch n {
		case "curves":
			return 0
		case "decay-probe":
			return 1
		case "lr-decay":
			return 2
		case "interpolation":
			return 3
		}
		return 4
	}
	out := slices.Clone(names)
	slices.SortStableFunc(out, func(a, b string) int { return rank(a) - rank(b) })
	return out
}

// plotTitle is a plot's heading.
func plotTitle(name string) string {
	switch name {
	case "curves":
		return "Validation curves (report)"
	case "decay-probe":
		return "Decay probe"
	case "lr-decay":
		return "LR-decay branch"
	case "interpolation":
		return "Interpolation"
	}
	if p, ok := strings.CutPrefix(name, "parameters-"); ok {
		return "Parameters: " + p
	}
	if p, ok := strings.CutPrefix(name, "search-"); ok {
		return "Search: " + p
	}
	if t, ok := strings.CutSuffix(name, "-heatmap"); ok {
		return t + " heat map"
	}
	return name
}

// handleFile serves a table or a plot of a sweep's output, and nothing else: the kind is
// tables or plots, the name one segment of a known format, the key under the output.
func (s *Server) handleFile(w http.ResponseWriter, r *http.Request) {
	kind, name := r.PathValue("kind"), r.PathValue("name")
	dir, ok := fileKinds[kind]
	if !ok || !fileNamePattern.MatchString(name) || strings.Contains(name, "..") {
		http.Error(w, "not a file of this sweep", http.StatusNotFound)
		return
	}
	d, err := s.manifestOnly(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	key := dir(d.Output) + name
	if !strings.HasPrefix(key, d.Output+"/") {
		http.Error(w, "not a file of this sweep", http.StatusNotFound)
		return
	}
	b, err := s.opt.Store.Get(r.Context(), key)
	if err != nil {
		s.fail(w, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", contentTypes[path.Ext(name)])
	// a file is never a page: no script, no form, no frame of this site
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'")
	// a file is rewritten as results land: the browser keeps it, but asks each time
	sum := sha256.Sum256(b)
	etag := `"` + hex.EncodeToString(sum[:12]) + `"`
	h.Set("ETag", etag)
	h.Set("Cache-Control", "private, no-cache")
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	disp := "inline"
	if r.URL.Query().Get("download") == "1" || !strings.HasPrefix(contentTypes[path.Ext(name)], "image/") {
		disp = "attachment"
	}
	h.Set("Content-Disposition", disp+`; filename="`+name+`"`)
	_, _ = w.Write(b)
}
