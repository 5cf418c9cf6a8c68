package report

// The layout every sweep plot shares. The trials of one configuration (a Line) that differ
// only in seed are drawn as one line: their mean at each x that all of them have, over a
// light band from the lowest to the highest seed. Lines are faceted, one panel per β1 for
// SF-AdamW (vanilla and refined together) and one per schedule and β1 for AdamW, every
// panel on the same axes. Colour says C, on viridis by log C across the figure (vanilla
// black; AdamW colours of its own); the dash says the kind of series (the iterate, before
// or after a probe); a marker shape tells apart the lines of one panel and colour that
// differ in lr, β2 or batch size. The legend is a column right of the panels, outside
// every data area, headed by the figure's title.
//
// This file holds the panels, colours and markers; seedlines.go the lines and their seeds'
// mean; facetfigure.go the figure drawn.

import (
	"cmp"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/training"
)

// facet is a panel: the SF-AdamW lines of one β1, or the lines of another optimizer and
// schedule at one β1.
type facet struct {
	sf                  bool
	optimizer, schedule string // when not SF-AdamW
	beta1               float64
}

func facetOf(l Line) facet {
	if l.sf() {
		return facet{sf: true, beta1: l.Beta1}
	}
	return facet{optimizer: l.Optimizer, schedule: l.Schedule, beta1: l.Beta1}
}

// compareFacets orders panels: SF-AdamW by β1, then the other optimizers by name, schedule
// and β1.
func compareFacets(a, b facet) int {
	return cmp.Or(compareBool(b.sf, a.sf), cmp.Compare(a.optimizer, b.optimizer), cmp.Compare(a.schedule, b.schedule), cmp.Compare(a.beta1, b.beta1))
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// compareLines orders lines by panel, then C (vanilla last, so drawn on top), lr, β2 and
// batch size.
func compareLines(a, b Line) int {
	return cmp.Or(compareFacets(facetOf(a), facetOf(b)), compareBool(a.C == 0, b.C == 0), cmp.Compare(a.C, b.C),
		cmp.Compare(a.LR, b.LR), cmp.Compare(a.Beta2, b.Beta2), cmp.Compare(a.BatchTokens, b.BatchTokens))
}

// title is the panel's title: β1, after the optimizer where the figure has more than
// SF-AdamW (named).
func (f facet) title(named bool) string {
	b1 := "β1 = " + formatG(f.beta1)
	switch {
	case !f.sf:
		return familyText(f.optimizer, f.schedule) + ", " + b1
	case named:
		return "SF-AdamW, " + b1
	}
	return b1
}

// familyText names an optimizer other than SF-AdamW with its schedule: "AdamW, constant LR".
func familyText(optimizer, schedule string) string {
	name := optimizer
	if optimizer == training.AdamW {
		name = "AdamW"
	}
	if schedule == "" {
		return name
	}
	return name + ", " + scheduleText(schedule)
}

func scheduleText(s string) string {
	switch sfadamw.ScheduleKind(s) {
	case sfadamw.Constant:
		return "constant LR"
	case sfadamw.Cosine:
		return "cosine LR"
	case sfadamw.Linear:
		return "linear LR decay"
	case sfadamw.WSD:
		return "WSD"
	}
	return s
}

// Colours of the lines that C does not place on viridis, and of the legend's entries for
// dashes, markers and bands.
var (
	vanillaColor = color.RGBA{0, 0, 0, 255}
	familyColors = []color.RGBA{{214, 39, 40, 255}, {255, 127, 14, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}}
	keyColor     = color.RGBA{110, 110, 110, 255}
)

// family is an optimizer other than SF-AdamW with its schedule: a colour of its own.
type family struct{ optimizer, schedule string }

// palette gives lines their colours: SF-AdamW by C, vanilla black; every other optimizer
// and schedule one of familyColors.
type palette struct {
	cs       []float64 // the Cs > 0 of the SF-AdamW lines, ascending
	families []family  // in order
}

func newPalette(lines []meanLine) palette {
	var p palette
	for _, ml := range lines {
		l := ml.line
		switch {
		case !l.sf():
			p.families = append(p.families, family{l.Optimizer, l.Schedule})
		case l.C > 0:
			p.cs = append(p.cs, l.C)
		}
	}
	slices.Sort(p.cs)
	p.cs = slices.Compact(p.cs)
	slices.SortFunc(p.families, func(a, b family) int {
		return cmp.Or(cmp.Compare(a.optimizer, b.optimizer), cmp.Compare(a.schedule, b.schedule))
	})
	p.families = slices.Compact(p.families)
	return p
}

func (p palette) color(l Line) color.RGBA {
	switch {
	case !l.sf():
		return familyColors[slices.Index(p.families, family{l.Optimizer, l.Schedule})%len(familyColors)]
	case l.C == 0:
		return vanillaColor
	}
	return cColor(l.C, p.cs)
}

// cColor places c on viridis by log C between the least and the greatest of cs, from dark
// purple to light green: the yellow end is too light for a thin line on white.
func cColor(c float64, cs []float64) color.RGBA {
	const dark, light = 0.12, 0.85
	lo, hi := math.Log(cs[0]), math.Log(cs[len(cs)-1])
	if lo == hi {
		return viridisAt((dark + light) / 2)
	}
	return viridisAt(dark + (light-dark)*(math.Log(c)-lo)/(hi-lo))
}

// colourOf is what sets a line's colour: its C (SF-AdamW), else its optimizer and schedule.
func colourOf(l Line) Line {
	if l.sf() {
		return Line{Optimizer: l.Optimizer, C: l.C}
	}
	return Line{Optimizer: l.Optimizer, Schedule: l.Schedule}
}

// translucent is a band's fill: the line's colour at a sixth of its strength.
func translucent(c color.RGBA) color.NRGBA { return color.NRGBA{R: c.R, G: c.G, B: c.B, A: 40} }

// fields are the hyperparameters besides the panel and the colour that set lines apart:
// lr, β2 and batch size.
type fields struct{ lr, beta2, batch bool }

// varying returns the fields in which some line differs from another line of the same
// group (group: the panel, or one group for the whole figure).
func varying(lines []meanLine, group func(Line) facet) fields {
	var f fields
	first := map[facet]Line{}
	for _, ml := range lines {
		l := ml.line
		l0, ok := first[group(l)]
		if !ok {
			first[group(l)] = l
			continue
		}
		f.lr = f.lr || l.LR != l0.LR
		f.beta2 = f.beta2 || l.Beta2 != l0.Beta2
		f.batch = f.batch || l.BatchTokens != l0.BatchTokens
	}
	return f
}

func (f fields) none() bool { return !f.lr && !f.beta2 && !f.batch }

// minus returns the fields of f not in g.
func (f fields) minus(g fields) fields {
	return fields{lr: f.lr && !g.lr, beta2: f.beta2 && !g.beta2, batch: f.batch && !g.batch}
}

// of returns the line's values of the fields, the others zero: lines with equal values
// share a marker.
func (f fields) of(l Line) Line {
	var k Line
	if f.lr {
		k.LR = l.LR
	}
	if f.beta2 {
		k.Beta2 = l.Beta2
	}
	if f.batch {
		k.BatchTokens = l.BatchTokens
	}
	return k
}

// text writes the line's values of the fields: "lr = 2e-3, β2 = 0.99, batch 0.5M tokens".
func (f fields) text(l Line) string {
	var parts []string
	if f.lr {
		parts = append(parts, "lr = "+formatLR(l.LR))
	}
	if f.beta2 {
		parts = append(parts, "β2 = "+formatG(l.Beta2))
	}
	if f.batch {
		parts = append(parts, "batch "+batchText(l.BatchTokens)+" tokens")
	}
	return strings.Join(parts, ", ")
}

// batchText writes a batch in tokens as the paper does, in binary units: 0.5M, 2K.
func batchText(tokens int) string {
	switch v := float64(tokens); {
	case v >= 1<<18:
		return strconv.FormatFloat(v/(1<<20), 'g', 3, 64) + "M"
	case v >= 1<<10:
		return strconv.FormatFloat(v/(1<<10), 'g', 3, 64) + "K"
	}
	return strconv.Itoa(tokens)
}

// markShapes are the markers that tell lines apart, in turn: filled shapes first.
var markShapes = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, draw.RingGlyph{},
	draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{},
}

func markGlyph(c color.Color, i int) draw.GlyphStyle {
	return draw.GlyphStyle{Color: c, Radius: vg.Points(2.3), Shape: markShapes[i%len(markShapes)]}
}
