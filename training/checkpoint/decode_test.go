package checkpoint

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/training/checkpoint/safetensors"
)

// TestDecodeCopies checks that Decode does not keep the bytes it was given, and that the
// aliasing decode used by Load does share them (so a 1.5 GB checkpoint is not copied).
func TestDecodeCopies(t *testing.T) {
	enc, err := sample(t, "micro-llama", 1).Encode()
	if err != nil {
		t.Fatal(err)
	}
	c, err := Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	a, err := decode(enc, true)
	if err != nil {
		t.Fatal(err)
	}
	before := math.Float32bits(c.Params[100])
	clear(enc)
	if math.Float32bits(c.Params[100]) != before {
		t.Error("Decode's parameters change with the bytes it decoded")
	}
	if littleEndian && a.Params[100] != 0 {
		t.Error("the aliasing decode copied the parameters")
	}
}

// TestDecodeRejects builds files that are valid safetensors but not valid checkpoints and
// checks each is refused with ErrInvalid and a reason naming the problem.
func TestDecodeRejects(t *testing.T) {
	enc, err := sample(t, "micro-llama", 3).Encode()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		modify func(f *safetensors.File)
		want   string
	}{
		{"no version", func(f *safetensors.File) { delete(f.Metadata, metaVersion) }, `"sfsweep.version": missing`},
		{"future version", func(f *safetensors.File) { f.Metadata[metaVersion] = "2" }, `reads versions 1 to 1`},
		{"no step", func(f *safetensors.File) { delete(f.Metadata, metaStep) }, `"sfsweep.step": missing`},
		{"bad step", func(f *safetensors.File) { f.Metadata[metaStep] = "-4" }, `"sfsweep.step" = "-4"`},
		{"no model", func(f *safetensors.File) { delete(f.Metadata, metaModel) }, `"sfsweep.model": missing`},
		{"model unknown field", func(f *safetensors.File) { f.Metadata[metaModel] = `{"arch":"llama","extra":1}` }, `unknown field "extra"`},
		{"model invalid", func(f *safetensors.File) {
			f.Metadata[metaModel] = strings.Replace(f.Metadata[metaModel], `"heads":2`, `"heads":0`, 1)
		}, "heads = 0"},
		{"other model", func(f *safetensors.File) {
			f.Metadata[metaModel] = strings.Replace(f.Metadata[metaModel], `"vocab":32`, `"vocab":33`, 1)
		}, `tensor "transformer.wte.weight": shape [32 16], the model's is [33 16]`},
		{"untied model, tied file", func(f *safetensors.File) {
			f.Metadata[metaModel] = strings.Replace(f.Metadata[metaModel], `"untied":false`, `"untied":true`, 1)
		}, `tensor "lm_head.weight": missing`},
		{"forged layer count", func(f *safetensors.File) {
			f.Metadata[metaModel] = strings.Replace(f.Metadata[metaModel], `"layers":2`, `"layers":999999999`, 1)
		}, "layers = 999999999: the file has only"},
		{"more layers", func(f *safetensors.File) {
			f.Metadata[metaModel] = strings.Replace(f.Metadata[metaModel], `"layers":2`, `"layers":3`, 1)
		}, `tensor "transformer.h.2.ln_1.weight": missing`},
		{"state not JSON", func(f *safetensors.File) { f.Metadata[metaState] = "{" }, `"sfsweep.state": not valid JSON`},
		{"optimizers not JSON", func(f *safetensors.File) { f.Metadata[metaOptimizers] = "[" }, `"sfsweep.optimizers"`},
		{"optimizer scalar", func(f *safetensors.File) {
			f.Metadata[metaOptimizers] = strings.Replace(f.Metadata[metaOptimizers], `"max_lr":0.002`, `"max_lr":"0x12"`, 1)
		}, `float "0x12"`},
		{"missing parameter", func(f *safetensors.File) { dropTensor(f, "transformer.ln_f.weight") }, `tensor "transformer.ln_f.weight": missing`},
		{"missing optimizer vector", func(f *safetensors.File) { dropTensor(f, "state.opt.z") }, `optimizer "opt": vector "z"`},
		{"unknown tensor", func(f *safetensors.File) {
			f.Tensors = append(f.Tensors, safetensors.Tensor{Info: safetensors.Info{Name: "lm_head.bias", DType: safetensors.F32, Shape: []int{1}}, Data: make([]byte, 4)})
		}, `tensor "lm_head.bias": neither`},
		{"F64 tensor", func(f *safetensors.File) {
			f.Tensors = append(f.Tensors, safetensors.Tensor{Info: safetensors.Info{Name: "state.x", DType: safetensors.F64, Shape: []int{1}}, Data: make([]byte, 8)})
		}, `tensor "state.x": dtype F64, want F32`},
		{"2-D vector", func(f *safetensors.File) {
			f.Tensors = append(f.Tensors, safetensors.Tensor{Info: safetensors.Info{Name: "state.x", DType: safetensors.F32, Shape: []int{1, 1}}, Data: make([]byte, 4)})
		}, `shape [1 1]: a state vector is 1-D`},
		{"bad vector name", func(f *safetensors.File) {
			f.Tensors = append(f.Tensors, safetensors.Tensor{Info: safetensors.Info{Name: "state.a b", DType: safetensors.F32, Shape: []int{0}}})
		}, `vector name "a b"`},
		{"parameter shape", func(f *safetensors.File) {
			for i := range f.Tensors {
				if f.Tensors[i].Name == "transformer.ln_f.weight" {
					f.Tensors[i].Shape = []int{4, 4}
				}
			}
		}, `tensor "transformer.ln_f.weight": shape [4 4], the model's is [16]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := safetensors.Decode(slices.Clone(enc))
			if err != nil {
				t.Fatal(err)
			}
			tt.modify(f)
			b, err := safetensors.Encode(f.Tensors, f.Metadata)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Decode(b)
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Decode error = %v, want ErrInvalid and %q", err, tt.want)
			}
		})
	}
	if _, err := Decode(enc[:len(enc)-1]); !errors.Is(err, ErrInvalid) || !errors.Is(err, safetensors.ErrInvalid) {
		t.Errorf("Decode of a truncated file: %v, want ErrInvalid wrapping safetensors.ErrInvalid", err)
	}
}

func dropTensor(f *safetensors.File, name string) {
	f.Tensors = slices.DeleteFunc(f.Tensors, func(x safetensors.Tensor) bool { return x.Name == name })
}

// TestDecodeForeignOrder checks that a file whose tensors are stored in another order (as
// the reference writer orders them: by dtype, then name) decodes to the same checkpoint.
func TestDecodeForeignOrder(t *testing.T) {
	c := sample(t, "micro-gpt2", 8)
	enc, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(f.Tensors, func(a, b safetensors.Tensor) int { return strings.Compare(a.Name, b.Name) })
	b, err := safetensors.Encode(f.Tensors, f.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameCheckpoint(got, c); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Model, c.Model) {
		t.Fatal("model differs")
	}
}
