// Package figure is a grid of gonum plots rendered together as one PNG, SVG or PDF image:
// the form in which the paper's theory figures (package analysis) and a sweep's plots
// (package report) are written. Rendering the same figure twice writes the same bytes.
package figure

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/sfsweep/sfsweep/fielderr"
)

// Figure is a grid of plots rendered together as one image, such as the two panels of the
// paper's toy-model figure.
type Figure struct {
	Plots         [][]*plot.Plot // rows of panels; a nil entry leaves its tile empty
	Width, Height vg.Length
}

// Save renders the figure to path; the extension (".png", ".svg" or ".pdf") selects the
// format.
func (f *Figure) Save(path string) (err error) {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	if !slices.Contains(Formats, format) {
		return fmt.Errorf("figure: save %s: unsupported format (want .png, .svg or .pdf)", path)
	}
	file, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("figure: save: %w", err)
	}
	defer func() {
		if cerr := file.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("figure: save: %w", cerr)
		}
	}()
	if err := f.Write(file, format); err != nil {
		return fmt.Errorf("figure: save %s: %w", path, err)
	}
	return nil
}

// SaveAll renders the figure in every format (dir/base.png, .svg and .pdf) and returns the
// paths written.
func (f *Figure) SaveAll(dir, base string) ([]string, error) {
	var paths []string
	for _, format := range Formats {
		p := filepath.Join(dir, base+"."+format)
		if err := f.Save(p); err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// Figure formats accepted by Figure.Write.
const (
	FormatPNG = "png" // at DPI, which its pHYs chunk states (pdfLaTeX sizes it by that)
	FormatSVG = "svg"
	FormatPDF = "pdf" // vector, its fonts embedded as Unicode subsets (pdf.go), for \includegraphics
)

// Formats are the figure formats, in the order SaveAll writes them.
var Formats = []string{FormatPNG, FormatSVG, FormatPDF}

// DPI is the resolution of a PNG figure.
const DPI = 150

// Write renders the figure to w in the named format, FormatPNG, FormatSVG or FormatPDF.
// Rendering the same figure twice writes the same bytes.
func (f *Figure) Write(w io.Writer, format string) error {
	if len(f.Plots) == 0 || len(f.Plots[0]) == 0 {
		return fmt.Errorf("figure: write: %w", &fielderr.Error{Field: "Plots", Value: len(f.Plots), Reason: "no plots"})
	}
	if f.Width <= 0 || f.Height <= 0 {
		return fmt.Errorf("figure: write: %w", &fielderr.Error{Field: "Width × Height", Value: fmt.Sprintf("%v × %v", f.Width, f.Height), Reason: "must be > 0"})
	}
	var c vg.CanvasWriterTo
	switch format {
	case FormatPNG:
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(f.Width, f.Height), vgimg.UseDPI(DPI))}
	case FormatSVG:
		c = vgsvg.New(f.Width, f.Height)
	case FormatPDF:
		c = newPDFCanvas(f.Width, f.Height)
	default:
		return fmt.Errorf("figure: write: %w",
			&fielderr.Error{Field: "format", Value: strconv.Quote(format), Reason: "must be png, svg or pdf"})
	}
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: len(f.Plots), Cols: len(f.Plots[0]), PadX: vg.Millimeter * 3, PadY: vg.Millimeter * 3,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(f.Plots, tiles, dc)
	for i := range f.Plots {
		for j, p := range f.Plots[i] {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
	if format == FormatPNG {
		var b bytes.Buffer
		if _, err := c.WriteTo(&b); err != nil {
			return fmt.Errorf("figure: write %s: %w", format, err)
		}
		png, err := withDPI(b.Bytes(), DPI)
		if err != nil {
			return fmt.Errorf("figure: write %s: %w", format, err)
		}
		if _, err := w.Write(png); err != nil {
			return fmt.Errorf("figure: write %s: %w", format, err)
		}
		return nil
	}
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("figure: write %s: %w", format, err)
	}
	return nil
}

// withDPI returns the PNG image png with a pHYs chunk after its header that states dpi
// (in pixels per metre, as PNG states it), which image/png does not write.
func withDPI(png []byte, dpi float64) ([]byte, error) {
	const header = 8 + 4 + 4 + 13 + 4 // the signature and the IHDR chunk
	if len(png) < header || string(png[12:16]) != "IHDR" {
		return nil, fmt.Errorf("not a PNG image with its IHDR first")
	}
	ppm := uint32(dpi/0.0254 + 0.5)
	chunk := binary.BigEndian.AppendUint32(nil, 9)
	chunk = append(chunk, "pHYs"...)
	chunk = binary.BigEndian.AppendUint32(chunk, ppm)
	chunk = binary.BigEndian.AppendUint32(chunk, ppm)
	chunk = append(chunk, 1) // the unit: the metre
	chunk = binary.BigEndian.AppendUint32(chunk, crc32.ChecksumIEEE(chunk[4:]))
	return slices.Concat(png[:header], chunk, png[header:]), nil
}
