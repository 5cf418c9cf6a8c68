// Package figure is a grid of gonum plots rendered together as one PNG or SVG image: the
// form in which the paper's theory figures (package analysis) and a sweep's plots (package
// report) are written. Rendering the same figure twice writes the same bytes.
package figure

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
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

// Save renders the figure to path; the extension (".png" or ".svg") selects the format.
func (f *Figure) Save(path string) (err error) {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	if format != FormatPNG && format != FormatSVG {
		return fmt.Errorf("figure: save %s: unsupported format (want .png or .svg)", path)
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

// SaveAll renders the figure as dir/base.png and dir/base.svg and returns the paths written.
func (f *Figure) SaveAll(dir, base string) ([]string, error) {
	var paths []string
	for _, ext := range []string{".png", ".svg"} {
		p := filepath.Join(dir, base+ext)
		if err := f.Save(p); err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// Figure formats accepted by Figure.Write.
const (
	FormatPNG = "png" // 150 dpi, as Figure.Save writes
	FormatSVG = "svg"
)

// Write renders the figure to w in the named format, FormatPNG or FormatSVG. Rendering the
// same figure twice writes the same bytes.
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
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(f.Width, f.Height), vgimg.UseDPI(150))}
	case FormatSVG:
		c = vgsvg.New(f.Width, f.Height)
	default:
		return fmt.Errorf("figure: write: %w",
			&fielderr.Error{Field: "format", Value: strconv.Quote(format), Reason: "must be png or svg"})
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
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("figure: write %s: %w", format, err)
	}
	return nil
}
