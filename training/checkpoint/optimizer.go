package checkpoint

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/sfsweep/sfsweep/sfadamw"
)

// optimizer is the scalar part of an sfadamw.State in a checkpoint; its vectors are the
// checkpoint's vectors <name>.<vector>. It is stored in the metadata as JSON.
type optimizer struct {
	Algorithm string     `json:"algorithm"`
	Step      int64      `json:"step"`
	SumLR2    exactFloat `json:"sum_lr2"`
	MaxLR     exactFloat `json:"max_lr"`
	LastLR    exactFloat `json:"last_lr"`
	LastC     exactFloat `json:"last_c"`
	Vectors   []string   `json:"vectors"` // in the State's order
}

// exactFloat is a float64 whose JSON form gives back the same bits: a finite number is
// written as the shortest decimal that parses back to it (strconv 'g', -1; "-0" for
// negative zero), and an infinity or NaN, which JSON numbers cannot hold, as a string of
// its IEEE 754 bits in hexadecimal ("0x7ff8000000000001"), keeping the NaN payload.
type exactFloat float64

func (f exactFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return []byte(`"0x` + fmt.Sprintf("%016x", math.Float64bits(v)) + `"`), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

func (f *exactFloat) UnmarshalJSON(b []byte) error {
	s := string(b)
	if hex, ok := strings.CutPrefix(s, `"0x`); ok {
		hex, ok = strings.CutSuffix(hex, `"`)
		u, err := strconv.ParseUint(hex, 16, 64)
		if !ok || len(hex) != 16 || err != nil {
			return fmt.Errorf("float %s: want a number or a string of 16 hexadecimal digits of its bits", s)
		}
		*f = exactFloat(math.Float64frombits(u))
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("float %s: want a number or a string of 16 hexadecimal digits of its bits", s)
	}
	*f = exactFloat(v)
	return nil
}

// PutOptimizer stores the optimizer state st in c under name: its vectors as c.Vectors
// <name>.<vector> (sharing st's slices, not copies) and its algorithm, step and scalars in
// the metadata, with every float64 scalar kept bit for bit.
func (c *Checkpoint) PutOptimizer(name string, st sfadamw.State[float32]) error {
	if !validName(name) {
		return fmt.Errorf("checkpoint: optimizer %q: want a name of ASCII letters, digits and ._-", name)
	}
	if _, ok := c.optimizers[name]; ok {
		return fmt.Errorf("checkpoint: optimizer %q: already in the checkpoint", name)
	}
	o := optimizer{
		Algorithm: st.Algorithm, Step: st.Step,
		SumLR2: exactFloat(st.SumLR2), MaxLR: exactFloat(st.MaxLR),
		LastLR: exactFloat(st.LastLR), LastC: exactFloat(st.LastC),
		Vectors: make([]string, len(st.Vectors)),
	}
	for i, v := range st.Vectors {
		if !validName(v.Name) {
			return fmt.Errorf("checkpoint: optimizer %q: vector %d: name %q: want ASCII letters, digits and ._-", name, i, v.Name)
		}
		if _, ok := c.vector(name + "." + v.Name); ok {
			return fmt.Errorf("checkpoint: optimizer %q: vector %q: already in the checkpoint", name, name+"."+v.Name)
		}
		o.Vectors[i] = v.Name
	}
	for _, v := range st.Vectors {
		c.Vectors = append(c.Vectors, Vector{Name: name + "." + v.Name, Data: v.Data})
	}
	if c.optimizers == nil {
		c.optimizers = map[string]optimizer{}
	}
	c.optimizers[name] = o
	return nil
}

// Optimizer returns the optimizer state stored under name by PutOptimizer. Its vectors
// share the checkpoint's slices; restoring an optimizer from it copies them.
func (c *Checkpoint) Optimizer(name string) (sfadamw.State[float32], error) {
	o, ok := c.optimizers[name]
	if !ok {
		return sfadamw.State[float32]{}, fmt.Errorf("checkpoint: step %d: no optimizer %q (have %v)", c.Step, name, c.OptimizerNames())
	}
	st := sfadamw.State[float32]{
		Algorithm: o.Algorithm, Step: o.Step,
		SumLR2: float64(o.SumLR2), MaxLR: float64(o.MaxLR),
		LastLR: float64(o.LastLR), LastC: float64(o.LastC),
		Vectors: make([]sfadamw.Vector[float32], len(o.Vectors)),
	}
	for i, vn := range o.Vectors {
		d, ok := c.vector(name + "." + vn)
		if !ok {
			return sfadamw.State[float32]{}, fmt.Errorf("checkpoint: step %d: optimizer %q: no vector %q", c.Step, name, name+"."+vn)
		}
		st.Vectors[i] = sfadamw.Vector[float32]{Name: vn, Data: d}
	}
	return st, nil
}

// OptimizerNames returns the names of the optimizer states in c, sorted.
func (c *Checkpoint) OptimizerNames() []string {
	names := make([]string, 0, len(c.optimizers))
	for n := range c.optimizers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
