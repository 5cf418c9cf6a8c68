package analysis

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/sfsweep/sfsweep/internal/figure"
)

// checkImages checks that paths hold a decodable PNG of the figure's size at 150 dpi and an
// SVG document.
func checkImages(t *testing.T, f *figure.Figure, paths []string) {
	t.Helper()
	if len(paths) != 3 {
		t.Fatalf("wrote %v, want a PNG, an SVG and a PDF", paths)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		switch filepath.Ext(p) {
		case ".png":
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			wantW := int(f.Width.Points() / 72 * 150)
			if w := img.Bounds().Dx(); w < wantW-2 || w > wantW+2 {
				t.Errorf("%s: width %d px, want %d", p, w, wantW)
			}
		case ".svg":
			if !bytes.Contains(b, []byte("<svg")) || !bytes.Contains(b, []byte("</svg>")) {
				t.Errorf("%s: not an SVG document", p)
			}
		case ".pdf":
			if !bytes.HasPrefix(b, []byte("%PDF-")) || !bytes.HasSuffix(bytes.TrimSpace(b), []byte("%%EOF")) {
				t.Errorf("%s: not a PDF document", p)
			}
		default:
			t.Errorf("unexpected file %s", p)
		}
	}
}

func TestFigures(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultToyConfig(0.5)
	cfg.Steps = 200
	toy, err := RunToy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	eos, err := EoS(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cf := DefaultCentralFlowConfig(0.5)
	cf.Steps = 300
	cfr, err := CentralFlow(cf)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := VanillaWeights(100, 0.9)
	r, _ := RefinedWeights(100, 0.5, 10)
	figs := map[string]func() (*figure.Figure, error){
		"river":   func() (*figure.Figure, error) { return RiverValleyFigure(DefaultToyRegion) },
		"toy":     func() (*figure.Figure, error) { return ToyFigure([]*ToyRun{toy}, DefaultToyRegion) },
		"weights": func() (*figure.Figure, error) { return WeightsFigure([]WeightSet{v, r, v}, 2, 20) },
		"eos":     func() (*figure.Figure, error) { return EoSFigure(eos) },
		"cf":      func() (*figure.Figure, error) { return CentralFlowFigure([]*CentralFlowRun{cfr}) },
	}
	for name, mk := range figs {
		f, err := mk()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		paths, err := f.SaveAll(dir, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkImages(t, f, paths)
	}
	f, _ := RiverValleyFigure(DefaultToyRegion)
	if err := f.Save(filepath.Join(dir, "x.gif")); err == nil {
		t.Error("Save accepted a .gif")
	}
	if _, err := WeightsFigure([]WeightSet{v}, 0, 10); err == nil {
		t.Error("WeightsFigure accepted cols = 0")
	}
}

// TestBinWeights checks that binning preserves the total mass.
func TestBinWeights(t *testing.T) {
	s, err := RefinedWeights(1000, 0.9, 50)
	if err != nil {
		t.Fatal(err)
	}
	mass, approx, width := binWeights(s, 37)
	var m, a, want float64
	for i := range mass {
		m += mass[i]
		a += approx[i]
	}
	for _, v := range s.Approx {
		want += v
	}
	if d := m - 1; d > 1e-12 || d < -1e-12 || a-want > 1e-12 || want-a > 1e-12 || width != 1000.0/37 {
		t.Errorf("binned mass %v (want 1), approx %v (want %v), width %v", m, a, want, width)
	}
}
