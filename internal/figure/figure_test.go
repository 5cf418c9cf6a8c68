package figure

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
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

// A figure renders as a PNG of its size at 150 dpi, which its pHYs chunk states, as an SVG
// and as a PDF of its size in points, the same bytes each time; an unknown format, an
// extension Save does not know and a figure without plots are errors.
func TestWrite(t *testing.T) {
	f := lineFigure(t)
	for _, format := range Formats {
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
			if x, y, unit, ok := pngDensity(b.Bytes()); !ok || x != 5906 || y != 5906 || unit != 1 {
				t.Errorf("png: pHYs %d × %d per unit %d (found %v); want 5906 × 5906 per metre, 150 dpi", x, y, unit, ok)
			}
		}
		switch format {
		case FormatSVG:
			if !strings.Contains(a.String(), "<svg") {
				t.Error("svg: no <svg> element")
			}
		case FormatPDF:
			if !bytes.HasPrefix(a.Bytes(), []byte("%PDF-")) || !bytes.Contains(a.Bytes(), []byte("/MediaBox [0 0 288.00 144.00]")) {
				t.Errorf("pdf: no header or no 288 × 144 pt page:\n%.400q", a.String())
			}
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
	if err != nil || len(paths) != 3 || filepath.Base(paths[0]) != "line.png" || filepath.Base(paths[1]) != "line.svg" || filepath.Base(paths[2]) != "line.pdf" {
		t.Errorf("SaveAll = %v, %v", paths, err)
	}
	if err := f.Save(filepath.Join(dir, "line.gif")); err == nil {
		t.Error("Save(.gif) succeeded")
	}
}

// pngDensity reads a PNG's pHYs chunk, walking its chunks as the format defines them, and
// checks each chunk's CRC on the way.
func pngDensity(b []byte) (x, y uint32, unit byte, ok bool) {
	for at := 8; at+12 <= len(b); {
		n := int(binary.BigEndian.Uint32(b[at:]))
		if at+12+n > len(b) || crc32.ChecksumIEEE(b[at+4:at+8+n]) != binary.BigEndian.Uint32(b[at+8+n:]) {
			return 0, 0, 0, false
		}
		if string(b[at+4:at+8]) == "pHYs" && n == 9 {
			d := b[at+8:]
			return binary.BigEndian.Uint32(d), binary.BigEndian.Uint32(d[4:]), d[8], true
		}
		at += 12 + n
	}
	return 0, 0, 0, false
}
