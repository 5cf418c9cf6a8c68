package program

import (
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/fielderr"
)

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{0.002, "0.002"},
		{1e-05, "1e-05"},
		{3e-4, "0.0003"},
		{1 / 3.0, "0.3333333333333333"},
		{300.0, "300"},
		{-2.0, "-2"},
		{1e20, "100000000000000000000"},
		{1e21, "1e+21"},
		{2.5e21, "2.5e+21"},
		{float32(0.1), "0.1"},
		{math.NaN(), "NaN"},
		{42, "42"},
		{int64(-7), "-7"},
		{uint8(3), "3"},
		{true, "true"},
		{false, "false"},
		{"cosine", "cosine"},
		{"", ""},
		{nil, "null"},
		{[]any{1, 0.5, "a<b"}, `[1,0.5,"a<b"]`},
		{[]int{64, 128}, "[64,128]"},
		{[]float64{1e-05, 300, 0.5}, "[1e-05,300,0.5]"},
		{[]byte("ab"), "[97,98]"},
		{map[string]any{"b": 2, "a": []bool{true}}, `{"a":[true],"b":2}`},
	} {
		if got := Format(tc.v); got != tc.want {
			t.Errorf("Format(%#v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

func TestCheckValue(t *testing.T) {
	for _, tc := range []struct {
		key    string
		v      any
		reason string // "" if safe
	}{
		{"lr", 0.002, ""},
		{"lr", -0.5, ""},
		{"offset", "-0.5", ""},
		{"offset", "-1e-3", ""},
		{"data", "shards/train.bin", ""},
		{"name", "a..b", ""},
		{"flags", []string{"--evil"}, ""},
		{"optimizer", "--help", "read it as a flag"},
		{"optimizer", "-x", "read it as a flag"},
		{"data", "/etc/passwd", "absolute path"},
		{"data", "../other-trial/ckpt.pt", "'..' segment"},
		{"data", "a/../../b", "'..' segment"},
		{"data", `..\b`, "'..' segment"},
		{"data", "a\x00b", "NUL"},
		{"", 1, "not a parameter name"},
		{"lr=1", 1, "not a parameter name"},
		{"-lr", 1, "not a parameter name"},
		{"l r", 1, "not a parameter name"},
	} {
		err := CheckValue(tc.key, tc.v)
		if tc.reason == "" {
			if err != nil {
				t.Errorf("CheckValue(%q, %#v) = %v, want nil", tc.key, tc.v, err)
			}
			continue
		}
		var fe *fielderr.Error
		if !errors.As(err, &fe) || fe.Field != tc.key || !strings.Contains(fe.Reason, tc.reason) {
			t.Errorf("CheckValue(%q, %#v) = %v, want a field error for %q", tc.key, tc.v, err, tc.reason)
		}
	}
}

func TestArgv(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "train.py")
	args := []Arg{{"lr", 0.002}, {"model.n_layers", 4}, {"schedule", "cosine"}, {"betas", []float64{0.9, 0.95}}}
	for _, tc := range []struct {
		name string
		spec Spec
		want []string
	}{
		{"default", Spec{Program: "train.py", Interpreter: "python3"},
			[]string{"python3", prog, "--lr=0.002", "--model.n_layers=4", "--schedule=cosine", "--betas=[0.9,0.95]"}},
		{"no interpreter", Spec{Program: prog},
			[]string{prog, "--lr=0.002", "--model.n_layers=4", "--schedule=cosine", "--betas=[0.9,0.95]"}},
		{"no hyphens", Spec{Program: "train.py", Command: []string{"${env}", "torchrun", "--nproc_per_node=1", "${program}", "${args_no_hyphens}"}},
			[]string{"torchrun", "--nproc_per_node=1", prog, "lr=0.002", "model.n_layers=4", "schedule=cosine", "betas=[0.9,0.95]"}},
		{"json", Spec{Program: "train.py", Interpreter: "python3", Command: []string{"${interpreter}", "-u", "${program}", "--config", "${args_json}"}},
			[]string{"python3", "-u", prog, "--config", `{"lr":0.002,"model.n_layers":4,"schedule":"cosine","betas":[0.9,0.95]}`}},
		{"interpreter dropped", Spec{Program: "train.py", Command: []string{"${interpreter}", "${program}", "${args}"}},
			[]string{prog, "--lr=0.002", "--model.n_layers=4", "--schedule=cosine", "--betas=[0.9,0.95]"}},
		{"a module, no program", Spec{Interpreter: "python3", Version: "1", Command: []string{"${env}", "${interpreter}", "-m", "src.train", "${args}"}},
			[]string{"python3", "-m", "src.train", "--lr=0.002", "--model.n_layers=4", "--schedule=cosine", "--betas=[0.9,0.95]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.spec.Argv(dir, args)
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("Argv = %q, %v\nwant %q", got, err, tc.want)
			}
		})
	}
	flags := Spec{Program: "train.py", Command: []string{"${program}", "${args_no_boolean_flags}"}}
	if got, err := flags.Argv(dir, []Arg{{"fp16", true}, {"compile", false}, {"lr", 0.1}}); err != nil || !slices.Equal(got, []string{prog, "--fp16", "--lr=0.1"}) {
		t.Errorf("${args_no_boolean_flags}: Argv = %q, %v, want true as a bare flag and false left out", got, err)
	}
	if got, err := (Spec{Program: prog}).Argv(dir, nil); err != nil || !slices.Equal(got, []string{prog}) {
		t.Errorf("Argv without args = %q, %v", got, err)
	}
	if _, err := (Spec{Program: prog}).Argv(dir, []Arg{{"out", "/tmp/x"}}); err == nil {
		t.Error("Argv passed an absolute path")
	}
	if _, err := (Spec{Program: prog, Command: []string{"${program}", "${args_json_file}"}}).Argv(dir, nil); err == nil {
		t.Error("Argv expanded an unknown macro")
	}
	if _, err := (Spec{Program: prog, Command: []string{"${program}", "${args_json}"}}).Argv(dir, []Arg{{"lr", math.Inf(1)}}); err == nil {
		t.Error("Argv wrote +Inf into JSON")
	}
}
