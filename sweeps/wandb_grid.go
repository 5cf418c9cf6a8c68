package sweeps

// The optimizer grids of a W&B import: one per optimizer on the base's templates, and,
// for a grid search that run_cap cuts short, the first run_cap points of W&B's grid order
// as the union of a few grids.

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/training"
)

// DefaultBeta2 is β2 of an import whose sweep searches beta1 only and whose base gives
// none: the β2 of examples/c-sensitivity-quick.yaml's grids.
const DefaultBeta2 = 0.99

// wandbTemplate is a grid the import starts from: the base's grid of that name (base ≥ 0),
// or a bare one of an optimizer.
type wandbTemplate struct {
	node *yaml.Node
	base int
}

// templates are the grids the sweep's parameters go into: one per optimizer named, the
// base's of that name as its template; else each of the base's; else one sfadamw grid.
func templates(names []string, baseGrids *yaml.Node) []wandbTemplate {
	var bases []*yaml.Node
	if baseGrids != nil && baseGrids.Kind == yaml.SequenceNode {
		bases = baseGrids.Content
	}
	var ts []wandbTemplate
	switch {
	case names != nil:
		for _, name := range names {
			t := wandbTemplate{&yaml.Node{Kind: yaml.MappingNode}, -1}
			setKey(t.node, "name", quoted(name))
			for bi, b := range bases {
				if n := lookup(b, "name"); n != nil && n.Value == name {
					t = wandbTemplate{cloneNode(b), bi}
					break
				}
			}
			ts = append(ts, t)
		}
	case len(bases) > 0:
		for bi, b := range bases {
			ts = append(ts, wandbTemplate{cloneNode(b), bi})
		}
	default:
		t := wandbTemplate{&yaml.Node{Kind: yaml.MappingNode}, -1}
		setKey(t.node, "name", quoted(training.SFAdamW))
		ts = append(ts, t)
	}
	return ts
}

// wandbAxis is a parameter of W&B's grid with more than one value: its values are the
// items of node (a list), or the optimizer names.
type wandbAxis struct {
	p    *wandbParam
	node *yaml.Node // nil: the optimizer
	n    int
}

// grids builds the optimizer grids. In a grid search whose run_cap is below the grid's
// points, W&B runs the first run_cap of them in its order: the product of the parameters
// sorted by name, the last varying fastest. Those points are written as blocks, each a
// product (the axes before one fixed, a first few values of that one, all of those
// after), one grid per block and optimizer.
func (w *wandbImport) grids(out, k *yaml.Node, grid, shared []wandbValue, names []string, optimizer *wandbParam, baseGrids *yaml.Node) ([]*yaml.Node, error) {
	var axes []wandbAxis
	if optimizer != nil && len(names) > 1 {
		axes = append(axes, wandbAxis{p: optimizer, n: len(names)})
	}
	for _, v := range slices.Concat(grid, shared) {
		if v.node.Kind == yaml.SequenceNode && len(v.node.Content) > 1 {
			axes = append(axes, wandbAxis{p: v.p, node: v.node, n: len(v.node.Content)})
		}
	}
	slices.SortFunc(axes, func(a, b wandbAxis) int { return strings.Compare(a.p.key, b.p.key) })
	points := 1
	for _, a := range axes {
		points = min(points*a.n, 1<<40)
	}
	blocks := [][][]int{nil} // nil: every value of every axis
	capped := w.method == MethodGrid && w.runCap > 0 && w.runCap < points
	if capped {
		sizes := make([]int, len(axes))
		for i, a := range axes {
			sizes[i] = a.n
		}
		blocks = wandbBlocks(sizes, w.runCap)
	}
	// the values of v in block b: all of them, or those of the block's indices
	pick := func(b [][]int, v wandbValue) *yaml.Node {
		i := slices.IndexFunc(axes, func(a wandbAxis) bool { return a.p == v.p })
		if b == nil || i < 0 {
			return cloneNode(v.node)
		}
		seq := flowSeq()
		for _, j := range b[i] {
			seq.Content = append(seq.Content, cloneNode(v.node.Content[j]))
		}
		return seq
	}
	var gridShared []wandbValue // shared parameters a capped grid sets in each grid
	for _, v := range shared {
		if !capped || v.node.Kind != yaml.SequenceNode || len(v.node.Content) < 2 {
			setKey(out, v.p.name, v.node)
			w.from(v.p.name, v.p.field(), v.p.line)
			w.bounds(v.p.name, v)
			continue
		}
		if v.p.name == ParamWarmupFrac {
			return nil, v.p.err(brief(v.p.v), fmt.Sprintf("run_cap = %d cuts the grid short, and warmup_frac is the manifest's, not a grid's: list one value, or drop run_cap", w.runCap))
		}
		gridShared = append(gridShared, v)
	}
	if capped {
		w.note("run_cap", w.runCap, w.runCapLine, fmt.Sprintf("W&B runs the first %d of the grid's %d points, in its order (the parameters sorted by name, the last varying fastest): written as %d grids of exactly those points", w.runCap, points, len(blocks)))
	}
	ts := templates(names, baseGrids)
	var grids []*yaml.Node
	var seen []string
	for _, b := range blocks {
		for ti, t := range ts {
			if optimizer != nil && len(names) > 1 && b != nil && !slices.Contains(b[slices.IndexFunc(axes, func(a wandbAxis) bool { return a.node == nil })], ti) {
				continue
			}
			g := cloneNode(t.node)
			gname := ""
			if n := lookup(g, "name"); n != nil {
				gname = n.Value
			}
			var from []wandbValue
			for _, v := range slices.Concat(grid, gridShared) {
				if v.p.name == ParamC && gname != training.SFAdamW {
					continue // C is refined SF-AdamW's
				}
				switch v.p.name {
				case ParamBetas:
					delKey(g, ParamBeta1)
					delKey(g, ParamBeta2)
				case ParamBeta1, ParamBeta2:
					if betas := lookup(g, ParamBetas); betas != nil {
						w.splitBetas(g, betas, v.p)
					}
				}
				setKey(g, v.p.name, pick(b, v))
				from = append(from, v)
			}
			if err := w.complete(g, gname, k); err != nil {
				return nil, err
			}
			key, _ := yaml.Marshal(g)
			if slices.Contains(seen, string(key)) {
				continue // an adamw grid that differs from another only in C
			}
			seen = append(seen, string(key))
			gi := len(grids)
			if optimizer != nil {
				w.from(fmt.Sprintf("optimizers[%d].name", gi), optimizer.field(), optimizer.line)
			}
			for _, v := range from {
				w.from(fmt.Sprintf("optimizers[%d].%s", gi, v.p.name), v.p.field(), v.p.line)
				if v.p.name == ParamBeta1 || v.p.name == ParamBeta2 {
					w.from(fmt.Sprintf("optimizers[%d].%s", gi, ParamBetas), v.p.field(), v.p.line)
				}
				w.bounds(fmt.Sprintf("optimizers[%d].%s", gi, v.p.name), v)
			}
			grids, w.baseGrid = append(grids, g), append(w.baseGrid, t.base)
		}
	}
	return grids, nil
}

// splitBetas replaces the template's (β1, β2) pairs by beta1 and beta2 apart, keeping the
// one of the two that the sweep does not set (p sets the other).
func (w *wandbImport) splitBetas(g, betas *yaml.Node, p *wandbParam) {
	delKey(g, ParamBetas)
	keep, at := ParamBeta2, 1
	if p.name == ParamBeta2 {
		keep, at = ParamBeta1, 0
	}
	seq := flowSeq()
	var vs []string
	for _, pair := range betas.Content {
		if pair.Kind == yaml.SequenceNode && len(pair.Content) == 2 && !slices.Contains(vs, pair.Content[at].Value) {
			vs = append(vs, pair.Content[at].Value)
			seq.Content = append(seq.Content, cloneNode(pair.Content[at]))
		}
	}
	if len(seq.Content) > 0 && lookup(g, keep) == nil {
		setKey(g, keep, seq)
	}
}

// complete checks that grid g has what a grid needs, and gives a β1-only grid the base's
// β2, or DefaultBeta2.
func (w *wandbImport) complete(g *yaml.Node, gname string, k *yaml.Node) error {
	if lookup(g, ParamBetas) == nil && lookup(g, ParamBeta1) != nil && lookup(g, ParamBeta2) == nil {
		setKey(g, ParamBeta2, numberNode(DefaultBeta2))
		if !w.beta2Noted {
			w.note("parameters.beta2", "not given", k.Line, fmt.Sprintf("beta2 = %g, the default base's", DefaultBeta2))
			w.beta2Noted = true
		}
	}
	missing := ""
	switch {
	case lookup(g, ParamLR) == nil:
		missing = "learning_rate"
	case lookup(g, ParamBetas) == nil && lookup(g, ParamBeta1) == nil:
		missing = "beta1"
	}
	if missing != "" {
		return &fielderr.Error{Field: "parameters." + missing, Value: "not given", Reason: fmt.Sprintf("the %s grid needs it: give it here, or in an optimizer grid of the base manifest (sfsweep needs lr, and beta1 or betas)", gname), Line: k.Line}
	}
	return nil
}

// wandbBlocks are the first n points of the product of axes of sizes, in order (the first
// axis slowest), as blocks: for each axis, the indices of its values the block takes.
func wandbBlocks(sizes []int, n int) [][][]int {
	var blocks [][][]int
	var prefix []int
	for i := range sizes {
		suffix := 1
		for _, s := range sizes[i+1:] {
			suffix = min(suffix*s, 1<<40)
		}
		if q := n / suffix; q > 0 {
			b := make([][]int, len(sizes))
			for j := range sizes {
				switch {
				case j < i:
					b[j] = []int{prefix[j]}
				case j == i:
					b[j] = firstN(q)
				default:
					b[j] = firstN(sizes[j])
				}
			}
			blocks = append(blocks, b)
			n -= q * suffix
			prefix = append(prefix, q)
		} else {
			prefix = append(prefix, 0)
		}
		if n == 0 {
			break
		}
	}
	return blocks
}

func firstN(n int) []int {
	is := make([]int, n)
	for i := range is {
		is[i] = i
	}
	return is
}
