// Package checkpoint saves and restores the state of a training run, so that a run killed
// at any point resumes bitwise identically from its newest valid checkpoint.
//
// A checkpoint is one safetensors file: the model parameters as one F32 tensor per
// parameter, with the names and shapes of [model.Layout] (so PyTorch and other tools read
// the weights directly), every extra state vector as a 1-D F32 tensor "state.<name>", and
// in "__metadata__" the step, the model config, the scalars of the optimizers and the
// training loop's own JSON state. Encoding is deterministic: the same checkpoint gives the
// same bytes.
//
// In an object store ([blob.Store]) the checkpoint of step s of the run under prefix p is
//
//	p/step-0000000s.safetensors   the file
//	p/step-0000000s.json          its sidecar: {"step", "sha256", "size", "version"}
//
// The sidecar is written after the data, and a checkpoint counts only once its sidecar
// exists and the data's size and SHA-256 match it, so a crash while saving leaves a
// checkpoint that does not count. [Latest] returns the newest checkpoint that verifies and
// reports each newer one it skipped, with the reason.
package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/sfsweep/sfsweep/training/checkpoint/safetensors"
	"github.com/sfsweep/sfsweep/training/model"
)

// Version is the format version this package writes and the newest it reads.
const Version = 1

// VectorPrefix starts the tensor name of every state vector.
const VectorPrefix = "state."

// Metadata keys of the safetensors file.
const (
	metaFormat     = "format" // "pt": the tensors are PyTorch weights, for transformers' loaders
	metaVersion    = "sfsweep.version"
	metaStep       = "sfsweep.step"
	metaModel      = "sfsweep.model"
	metaOptimizers = "sfsweep.optimizers"
	metaState      = "sfsweep.state"
)

// ErrInvalid is wrapped by the errors of Decode for a file that is not a valid checkpoint.
var ErrInvalid = errors.New("checkpoint: invalid")

// Checkpoint is the state of a training run after Step steps.
type Checkpoint struct {
	Step int64
	// Model is the model the parameters belong to; its Layout names and shapes them.
	Model model.Config
	// Params are the model parameters in Layout order.
	Params []float32
	// Vectors are extra state vectors (optimizer state, EWA averages, …), stored in this
	// order as tensors VectorPrefix+Name.
	Vectors []Vector
	// State is the training loop's own state as JSON (data position, RNG state, config
	// hash, …), stored as it is; empty for none.
	State json.RawMessage

	optimizers map[string]optimizer
}

// Vector is one named state vector.
type Vector struct {
	Name string
	Data []float32
}

// Vector returns the vector called name, or nil.
func (c *Checkpoint) Vector(name string) []float32 {
	d, _ := c.vector(name)
	return d
}

func (c *Checkpoint) vector(name string) ([]float32, bool) {
	for _, v := range c.Vectors {
		if v.Name == name {
			return v.Data, true
		}
	}
	return nil, false
}

// validName reports whether s may name a vector or an optimizer: ASCII letters, digits and
// "._-", not empty.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// check validates c and returns the layout of its model.
func (c *Checkpoint) check() (model.Layout, error) {
	if c.Step < 0 {
		return model.Layout{}, fmt.Errorf("step = %d: must be ≥ 0", c.Step)
	}
	if err := c.Model.Validate(); err != nil {
		return model.Layout{}, fmt.Errorf("model: %w", err)
	}
	l := c.Model.Layout()
	if len(c.Params) != l.Size {
		return l, fmt.Errorf("params: length %d, the model has %d parameters", len(c.Params), l.Size)
	}
	seen := make(map[string]bool, len(c.Vectors))
	for i, v := range c.Vectors {
		if !validName(v.Name) {
			return l, fmt.Errorf("vector %d: name %q: want ASCII letters, digits and ._-", i, v.Name)
		}
		if seen[v.Name] {
			return l, fmt.Errorf("vector %q: duplicate name", v.Name)
		}
		seen[v.Name] = true
	}
	for _, name := range c.OptimizerNames() {
		o := c.optimizers[name]
		if !validName(name) {
			return l, fmt.Errorf("optimizer %q: want a name of ASCII letters, digits and ._-", name)
		}
		for _, vn := range o.Vectors {
			if !seen[name+"."+vn] {
				return l, fmt.Errorf("optimizer %q: vector %q: no vector %q in the checkpoint", name, vn, name+"."+vn)
			}
		}
	}
	if len(c.State) > 0 && !json.Valid(c.State) {
		return l, fmt.Errorf("state: not valid JSON")
	}
	return l, nil
}

// metadata returns the "__metadata__" of c.
func (c *Checkpoint) metadata() (map[string]string, error) {
	cfg, err := json.Marshal(c.Model)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	meta := map[string]string{
		metaFormat:  "pt",
		metaVersion: strconv.Itoa(Version),
		metaStep:    strconv.FormatInt(c.Step, 10),
		metaModel:   string(cfg),
	}
	if len(c.optimizers) > 0 {
		b, err := json.Marshal(c.optimizers) // map keys sorted: deterministic
		if err != nil {
			return nil, fmt.Errorf("optimizers: %w", err)
		}
		meta[metaOptimizers] = string(b)
	}
	if len(c.State) > 0 {
		meta[metaState] = string(c.State)
	}
	return meta, nil
}

// EncodedSize returns the size in bytes of the encoded checkpoint.
func (c *Checkpoint) EncodedSize() (int, error) {
	head, size, err := c.header()
	if err != nil {
		return 0, err
	}
	return len(head) + size, nil
}

func (c *Checkpoint) header() ([]byte, int, error) {
	l, err := c.check()
	if err != nil {
		return nil, 0, fmt.Errorf("checkpoint: encode step %d: %w", c.Step, err)
	}
	meta, err := c.metadata()
	if err != nil {
		return nil, 0, fmt.Errorf("checkpoint: encode step %d: %w", c.Step, err)
	}
	infos := make([]safetensors.Info, 0, len(l.Tensors)+len(c.Vectors))
	for _, t := range l.Tensors {
		infos = append(infos, safetensors.Info{Name: t.Name, DType: safetensors.F32, Shape: t.Shape})
	}
	for _, v := range c.Vectors {
		infos = append(infos, safetensors.Info{Name: VectorPrefix + v.Name, DType: safetensors.F32, Shape: []int{len(v.Data)}})
	}
	head, size, err := safetensors.Header(infos, meta)
	if err != nil {
		return nil, 0, fmt.Errorf("checkpoint: encode step %d: %w", c.Step, err)
	}
	return head, size, nil
}

// Encode returns the checkpoint as a safetensors file, written into one buffer of exactly
// its final size: the parameters (in Layout order, so the data of all parameter tensors is
// the flat buffer itself) and then the vectors.
func (c *Checkpoint) Encode() ([]byte, error) {
	head, size, err := c.header()
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(head)+size)
	off := copy(out, head)
	putFloat32s(out[off:off+4*len(c.Params)], c.Params)
	off += 4 * len(c.Params)
	for _, v := range c.Vectors {
		putFloat32s(out[off:off+4*len(v.Data)], v.Data)
		off += 4 * len(v.Data)
	}
	return out, nil
}

// WriteTo writes the checkpoint as Encode returns it, without a copy of its data: on a
// little-endian machine the float32s are written as they lie in memory, on another
// through a small buffer.
func (c *Checkpoint) WriteTo(w io.Writer) (int64, error) {
	head, _, err := c.header()
	if err != nil {
		return 0, err
	}
	n, err := w.Write(head)
	total := int64(n)
	write := func(v []float32) {
		if err != nil {
			return
		}
		if littleEndian {
			n, err = w.Write(bytesOf(v))
			total += int64(n)
			return
		}
		buf := make([]byte, 4*min(len(v), 1<<16))
		for len(v) > 0 && err == nil {
			k := min(len(v), len(buf)/4)
			putFloat32s(buf, v[:k])
			n, err = w.Write(buf[:4*k])
			total += int64(n)
			v = v[k:]
		}
	}
	write(c.Params)
	for _, v := range c.Vectors {
		write(v.Data)
	}
	if err != nil {
		return total, fmt.Errorf("checkpoint: write step %d: %w", c.Step, err)
	}
	return total, nil
}

// Decode parses a checkpoint file and checks it against the model it names: every
// parameter tensor present with its Layout shape, every other tensor a state vector. The
// returned checkpoint holds copies; data is not retained.
func Decode(data []byte) (*Checkpoint, error) { return decode(data, false) }

// decode is Decode; with alias, the float32 slices of the result may share memory with
// data, which the caller then must not modify or reuse.
func decode(data []byte, alias bool) (*Checkpoint, error) {
	f, err := safetensors.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	c, err := fromFile(f, alias)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return c, nil
}

func fromFile(f *safetensors.File, alias bool) (*Checkpoint, error) {
	meta := f.Metadata
	get := func(key string) (string, error) {
		v, ok := meta[key]
		if !ok {
			return "", fmt.Errorf("metadata %q: missing", key)
		}
		return v, nil
	}
	vs, err := get(metaVersion)
	if err != nil {
		return nil, err
	}
	if v, err := strconv.Atoi(vs); err != nil || v < 1 || v > Version {
		return nil, fmt.Errorf("metadata %q = %q: this package reads versions 1 to %d", metaVersion, vs, Version)
	}
	c := &Checkpoint{}
	ss, err := get(metaStep)
	if err != nil {
		return nil, err
	}
	if c.Step, err = strconv.ParseInt(ss, 10, 64); err != nil || c.Step < 0 {
		return nil, fmt.Errorf("metadata %q = %q: want an integer ≥ 0", metaStep, ss)
	}
	ms, err := get(metaModel)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(strings.NewReader(ms))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c.Model); err != nil {
		return nil, fmt.Errorf("metadata %q: %v", metaModel, err)
	}
	if err := c.Model.Validate(); err != nil {
		return nil, fmt.Errorf("metadata %q: %v", metaModel, err)
	}
	// Every layer has tensors of its own, so a file of n tensors holds at most n layers;
	// checking this first keeps a forged layer count from making the Layout huge.
	if c.Model.Layers > len(f.Tensors) {
		return nil, fmt.Errorf("metadata %q: layers = %d: the file has only %d tensors", metaModel, c.Model.Layers, len(f.Tensors))
	}
	if s, ok := meta[metaState]; ok {
		if !json.Valid([]byte(s)) {
			return nil, fmt.Errorf("metadata %q: not valid JSON", metaState)
		}
		c.State = json.RawMessage(s)
	}
	if s, ok := meta[metaOptimizers]; ok {
		if err := json.Unmarshal([]byte(s), &c.optimizers); err != nil {
			return nil, fmt.Errorf("metadata %q: %v", metaOptimizers, err)
		}
	}

	l := c.Model.Layout()
	params := make(map[string]int, len(l.Tensors)) // tensor name → index in f.Tensors
	for i, t := range f.Tensors {
		if t.DType != safetensors.F32 {
			return nil, fmt.Errorf("tensor %q: dtype %s, want F32", t.Name, t.DType)
		}
		if name, ok := strings.CutPrefix(t.Name, VectorPrefix); ok {
			if len(t.Shape) != 1 {
				return nil, fmt.Errorf("tensor %q: shape %v: a state vector is 1-D", t.Name, t.Shape)
			}
			if !validName(name) {
				return nil, fmt.Errorf("tensor %q: vector name %q: want ASCII letters, digits and ._-", t.Name, name)
			}
			c.Vectors = append(c.Vectors, Vector{Name: name, Data: float32s(t.Data, alias)})
			continue
		}
		lt, ok := l.Tensor(t.Name)
		if !ok {
			return nil, fmt.Errorf("tensor %q: neither a parameter of the model nor a state vector %s<name>", t.Name, VectorPrefix)
		}
		if !slices.Equal(t.Shape, lt.Shape) {
			return nil, fmt.Errorf("tensor %q: shape %v, the model's is %v", t.Name, t.Shape, lt.Shape)
		}
		params[t.Name] = i
	}
	if len(params) != len(l.Tensors) {
		for _, lt := range l.Tensors {
			if _, ok := params[lt.Name]; !ok {
				return nil, fmt.Errorf("tensor %q: missing", lt.Name)
			}
		}
	}
	c.Params = gatherParams(f, l, params, alias)
	if _, err := c.check(); err != nil {
		return nil, err
	}
	return c, nil
}

// gatherParams returns the flat parameter buffer. A file written by Encode holds the
// parameter tensors one after the other in Layout order: then their data is the flat
// buffer and is converted (or aliased) at once; otherwise each tensor is copied into place.
func gatherParams(f *safetensors.File, l model.Layout, index map[string]int, alias bool) []float32 {
	if len(l.Tensors) == 0 {
		return []float32{}
	}
	first := index[l.Tensors[0].Name]
	inOrder := first+len(l.Tensors) <= len(f.Tensors)
	for k, t := range l.Tensors {
		if !inOrder {
			break
		}
		inOrder = index[t.Name] == first+k
	}
	if inOrder {
		// Tensors are contiguous in the data buffer, so the data of the run of tensors is
		// one slice of it: from the first tensor's start for 4·Size bytes.
		b := f.Tensors[first].Offset
		return float32s(f.Data[b:b+4*l.Size:b+4*l.Size], alias)
	}
	out := make([]float32, l.Size)
	for _, t := range l.Tensors {
		float32sInto(out[t.Offset:t.Offset+t.Size], f.Tensors[index[t.Name]].Data)
	}
	return out
}
