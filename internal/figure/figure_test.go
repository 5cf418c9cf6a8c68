package figure

import (
	"bytes"
	"image/png"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

func lineFigure(t *testing.T) *Figure {
	t.Helper()
	p := plot.New()
	l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 1}, {X: 1, Y: 3}, {X: 2, Y: 2}})
	if err != nil {
		t.Fatal(err)
	}
	p.Add(l)
	return &Figure{Plots: [][]*plot.Plot{{p, nil}}, Width: 4 * vg.Inch, Height: 2 * vg.Inch}
}

// A figure renders as a PNG of its size at 150 dpi and as an SVG, the same bytes each time;
// an unknown format, an extension Save does not know and a figure without plots are errors.
func TestWrite(t *testing.T) {
	f := lineFigure(t)
	for _, format := range []string{FormatPNG, FormatSVG} {
		var a, b bytes.Buffer
		if err := f.Write(&a, format); err != nil {
			t.Fatal(err)
		}
		if err := f.Write(&b, format); err != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Errorf("%s: two renderings differ (%v)", format, err)
		}
		if format == FormatPNG {
			img, err := png.Decode(&a)
			if err != nil || img.Bounds().Dx() != 600 || img.Bounds().Dy() != 300 {
				t.Errorf("png: %v, %v; want 600×300", err, img.Bounds())
			}
		} else if !strings.Contains(a.String(), "<svg") {
			t.Error("svg: no <svg> element")
		}
	}
	if err := f.Write(&bytes.Buffer{}, "gif"); err == nil || !strings.Contains(err.Error(), `format = "gif"`) {
		t.Errorf("Write(gif) = %v", err)
	}
	if err := (&Figure{}).Write(&bytes.Buffer{}, FormatPNG); err == nil || !strings.Contains(err.Error(), "no plots") {
		t.Errorf("Write(empty) = %v", err)
	}
	dir := t.TempDir()
	paths, err := f.SaveAll(dir, "line")
	if err != nil || len(paths) != 2 || filepath.Base(paths[0]) != "line.png" || filepath.Base(paths[1]) != "line.svg" {
		t.Errorf("SaveAll = %v, %v", paths, err)
	}
	if err := f.Save(filepath.Join(dir, "line.gif")); err == nil {
		t.Error("Save(.gif) succeeded")
	}
}
