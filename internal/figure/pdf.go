package figure

// A figure as PDF: a vg.Canvas on fpdf, after gonum/plot's vgpdf, with the one difference
// that matters for these figures: fonts are embedded as Unicode TrueType subsets. vgpdf
// (v0.15.2) embeds them in the cp1252 code page, which has no β, α, − or ≈, and selects a
// bold face under a style it never added, so every label of a sweep's plots comes out
// wrong or not at all there.

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"strconv"
	"time"

	"codeberg.org/go-pdf/fpdf"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
)

// pdfCanvas draws onto one page of a PDF document in points, with vg's origin at the
// bottom left.
type pdfCanvas struct {
	doc    *fpdf.Fpdf
	w, h   vg.Length
	stack  []pdfContext
	fonts  map[font.Font]string // each face's family in the document
	images int
}

type pdfContext struct{ width vg.Length }

// epoch is the creation and modification date of every figure's PDF: a figure's bytes
// depend on the figure alone.
var epoch = time.Unix(0, 0).UTC()

func newPDFCanvas(w, h vg.Length) *pdfCanvas {
	doc := fpdf.NewCustom(&fpdf.InitType{UnitStr: "pt", Size: fpdf.SizeType{Wd: w.Points(), Ht: h.Points()}})
	doc.SetCreationDate(epoch)
	doc.SetModificationDate(epoch)
	doc.SetCatalogSort(true)
	doc.SetMargins(0, 0, 0)
	doc.SetAutoPageBreak(false, 0)
	doc.AddPage()
	c := &pdfCanvas{doc: doc, w: w, h: h, stack: make([]pdfContext, 1), fonts: map[font.Font]string{}}
	c.Push()
	c.Translate(vg.Point{Y: h})
	c.Scale(1, -1)
	vg.Initialize(c)
	return c
}

func (c *pdfCanvas) Size() (w, h vg.Length) { return c.w, c.h }

func (c *pdfCanvas) SetLineWidth(w vg.Length) {
	c.stack[len(c.stack)-1].width = w
	c.doc.SetLineWidth(w.Points())
}

func (c *pdfCanvas) SetLineDash(dashes []vg.Length, offs vg.Length) {
	ds := make([]float64, len(dashes))
	for i, d := range dashes {
		ds[i] = d.Points()
	}
	c.doc.SetDashPattern(ds, offs.Points())
}

func (c *pdfCanvas) SetColor(clr color.Color) {
	if clr == nil {
		clr = color.Black
	}
	r, g, b, a := clr.RGBA()
	if a > 0 { // un-premultiply
		r, g, b = r*0xffff/a, g*0xffff/a, b*0xffff/a
	}
	ri, gi, bi := int(r>>8), int(g>>8), int(b>>8)
	c.doc.SetFillColor(ri, gi, bi)
	c.doc.SetDrawColor(ri, gi, bi)
	c.doc.SetTextColor(ri, gi, bi)
	c.doc.SetAlpha(float64(a)/math.MaxUint16, "Normal")
}

func (c *pdfCanvas) Rotate(r float64) { c.doc.TransformRotate(-r*180/math.Pi, 0, 0) }

func (c *pdfCanvas) Translate(pt vg.Point) { c.doc.TransformTranslate(pt.X.Points(), pt.Y.Points()) }

func (c *pdfCanvas) Scale(x, y float64) { c.doc.TransformScale(x*100, y*100, 0, 0) }

func (c *pdfCanvas) Push() {
	c.stack = append(c.stack, c.stack[len(c.stack)-1])
	c.doc.TransformBegin()
}

func (c *pdfCanvas) Pop() {
	c.doc.TransformEnd()
	c.stack = c.stack[:len(c.stack)-1]
}

func (c *pdfCanvas) Stroke(p vg.Path) {
	if c.stack[len(c.stack)-1].width > 0 {
		c.path(p, "D")
	}
}

func (c *pdfCanvas) Fill(p vg.Path) { c.path(p, "F") }

func (c *pdfCanvas) path(p vg.Path, style string) {
	var x0, y0 float64
	for _, comp := range p {
		switch comp.Type {
		case vg.MoveComp:
			x0, y0 = comp.Pos.X.Points(), comp.Pos.Y.Points()
			c.doc.MoveTo(x0, y0)
		case vg.LineComp:
			c.doc.LineTo(comp.Pos.X.Points(), comp.Pos.Y.Points())
		case vg.ArcComp:
			start := comp.Pos.Add(vg.Point{X: comp.Radius * vg.Length(math.Cos(comp.Start)), Y: comp.Radius * vg.Length(math.Sin(comp.Start))})
			c.doc.LineTo(start.X.Points(), start.Y.Points())
			const deg = 180 / math.Pi
			r := comp.Radius.Points()
			c.doc.Arc(comp.Pos.X.Points(), comp.Pos.Y.Points(), r, r, comp.Angle*deg, comp.Start*deg, (comp.Start+comp.Angle)*deg, style)
			end := comp.Pos.Add(vg.Point{X: comp.Radius * vg.Length(math.Cos(comp.Start+comp.Angle)), Y: comp.Radius * vg.Length(math.Sin(comp.Start+comp.Angle))})
			c.doc.MoveTo(end.X.Points(), end.Y.Points())
		case vg.CurveComp:
			switch len(comp.Control) {
			case 1:
				c.doc.CurveTo(comp.Control[0].X.Points(), comp.Control[0].Y.Points(), comp.Pos.X.Points(), comp.Pos.Y.Points())
			case 2:
				c.doc.CurveBezierCubicTo(comp.Control[0].X.Points(), comp.Control[0].Y.Points(),
					comp.Control[1].X.Points(), comp.Control[1].Y.Points(), comp.Pos.X.Points(), comp.Pos.Y.Points())
			default:
				c.doc.SetError(fmt.Errorf("a curve of %d control points", len(comp.Control)))
			}
		case vg.CloseComp:
			c.doc.LineTo(x0, y0)
			c.doc.ClosePath()
		default:
			c.doc.SetError(fmt.Errorf("a path component of type %d", comp.Type))
		}
	}
	c.doc.DrawPath(style)
}

// family adds the face to the document, once, as a Unicode font of a family of its own
// (its size apart), and returns that family.
func (c *pdfCanvas) family(f font.Face) string {
	key := f.Font
	key.Size = 0
	if name, ok := c.fonts[key]; ok {
		return name
	}
	name := "f" + strconv.Itoa(len(c.fonts))
	var ttf bytes.Buffer
	if _, err := f.Face.WriteSourceTo(nil, &ttf); err != nil {
		c.doc.SetError(fmt.Errorf("font %s: %w", f.Name(), err))
		return name
	}
	c.doc.AddUTF8FontFromBytes(name, "", ttf.Bytes())
	c.fonts[key] = name
	return name
}

func (c *pdfCanvas) FillString(f font.Face, pt vg.Point, s string) {
	if f.Font.Size == 0 {
		return
	}
	em := f.Font.Size.Points()
	c.doc.SetFont(c.family(f), "", em)
	c.Push()
	defer c.Pop()
	c.Translate(pt)
	c.Scale(1, -1) // fpdf sets text top down
	// fpdf sets a cell's text a margin in from its left and its baseline 0.8 em below the
	// top of a cell one em high: the cell starts there, so that the baseline starts at pt.
	margin := c.doc.GetCellMargin()
	c.doc.TransformTranslate(-margin, -0.8*em)
	c.doc.SetXY(0, 0)
	c.doc.CellFormat(c.doc.GetStringWidth(s)+2*margin, em, s, "", 0, "L", false, 0, "")
}

func (c *pdfCanvas) DrawImage(rect vg.Rectangle, img image.Image) {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		c.doc.SetError(err)
		return
	}
	c.images++
	name := fmt.Sprintf("image%d.png", c.images)
	opt := fpdf.ImageOptions{ImageType: "png", ReadDpi: true}
	c.doc.RegisterImageOptionsReader(name, opt, &buf)
	size := rect.Size()
	c.doc.ImageOptions(name, rect.Min.X.Points(), rect.Min.Y.Points(), size.X.Points(), size.Y.Points(), false, opt, 0, "")
}

// WriteTo closes the page and writes the document; the canvas takes no drawing after it.
func (c *pdfCanvas) WriteTo(w io.Writer) (int64, error) {
	c.Pop()
	var b bytes.Buffer
	if err := c.doc.Output(&b); err != nil {
		return 0, err
	}
	return b.WriteTo(w)
}
