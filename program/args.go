package program

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/sfsweep/sfsweep/fielderr"
)

// Arg is one parameter passed to a program: its name as the manifest writes it
// ("model.n_layers") and its value.
type Arg struct {
	Key   string
	Value any
}

// Format writes a value as the program gets it: numbers in Go's shortest round-trip form
// (0.002, 1e-05; a whole number below 1e21 without exponent: 300, not 3e+02), booleans
// true and false, strings as they are, nil as null, lists and maps as JSON.
func Format(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return formatFloat(x, 64)
	case float32:
		return formatFloat(float64(x), 32)
	case json.Number:
		return x.String()
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(rv.Uint(), 10)
	case reflect.String:
		return rv.String()
	}
	b, err := marshal(v)
	if err != nil {
		return fmt.Sprint(v) // NaN in a list: JSON has no spelling for it
	}
	return string(b)
}

func formatFloat(f float64, bits int) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, bits)
	}
	return strconv.FormatFloat(f, 'g', -1, bits)
}

// marshal is json.Marshal with numbers as Format writes them (1e-05, not 0.00001, as
// Python's json writes it too) and without HTML escaping, which would turn a "<" in a
// value into \u003c for a program that never sees a browser.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(shortest(v)); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// shortest is v with its floats, at any depth of lists and maps, as json.Numbers in
// Format's form. A NaN or an infinity becomes a number JSON refuses, as it should.
func shortest(v any) any {
	switch x := v.(type) {
	case float64, float32:
		return json.Number(Format(x))
	case nil, string, bool, json.Number:
		return v
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return v
		}
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = shortest(rv.Index(i).Interface())
		}
		return out
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return v
		}
		out := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			out[it.Key().String()] = shortest(it.Value().Interface())
		}
		return out
	}
	return v
}

// MaxArgLen bounds one argument of a program, "--key=value" whole: Linux refuses an
// exec whose argument, with its NUL, passes MAX_ARG_STRLEN (32 pages, 131072 bytes), with
// "argument list too long", an error every attempt would meet again.
const MaxArgLen = 128<<10 - 1

// CheckValue reports, as a *fielderr.Error, why a parameter is unsafe to pass: a value
// that the program would read as a flag (it starts with "-" and is not a number) or as a
// path outside the run directory (absolute, or with a ".." segment), an argument longer
// than an exec takes (MaxArgLen), or a key that cannot stand in "--key=value". Nil if it
// is safe.
func CheckValue(key string, v any) error {
	if key == "" || strings.HasPrefix(key, "-") || strings.ContainsAny(key, "=\x00") || strings.ContainsFunc(key, isSpaceOrControl) {
		return &fielderr.Error{Field: key, Value: v, Reason: "not a parameter name: no '=', space, leading '-' or control character"}
	}
	if n := len("--") + len(key) + len("=") + len(Format(v)); n > MaxArgLen {
		return &fielderr.Error{Field: key, Value: fmt.Sprintf("%d bytes as --%s=...", n, key), Reason: fmt.Sprintf("an argument of the program must be at most %d bytes (Linux's MAX_ARG_STRLEN): pass a large value in a file", MaxArgLen)}
	}
	s, ok := v.(string)
	if !ok {
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.String {
			s, ok = rv.String(), true
		}
	}
	if !ok {
		return nil // numbers, booleans, and lists and maps written as JSON
	}
	if strings.ContainsRune(s, 0) {
		return &fielderr.Error{Field: key, Value: v, Reason: "contains a NUL byte, which no argv can carry"}
	}
	if strings.HasPrefix(s, "-") {
		if _, err := strconv.ParseFloat(s, 64); err != nil {
			return &fielderr.Error{Field: key, Value: v, Reason: "starts with '-': the program would read it as a flag"}
		}
	}
	if filepath.IsAbs(s) || strings.HasPrefix(s, "/") || strings.HasPrefix(s, `\`) {
		return &fielderr.Error{Field: key, Value: v, Reason: "an absolute path: a program reads only under its run directory"}
	}
	for _, seg := range strings.FieldsFunc(s, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == ".." {
			return &fielderr.Error{Field: key, Value: v, Reason: "a '..' segment: a program reads only under its run directory"}
		}
	}
	return nil
}

func isSpaceOrControl(r rune) bool { return r <= ' ' || r == 0x7f }

// Argv returns the argv of s for args, in the order given, by expanding its command
// template: ${interpreter} (nothing when s has none), ${program} (its absolute path, a
// relative Program resolved under programDir, a bare name on PATH: ProgramPath), ${args} (--key=value each),
// ${args_no_hyphens} (key=value each), ${args_no_boolean_flags} (--key=value, a boolean
// --key when true and nothing when false), ${args_json} (one argument, a JSON object),
// ${env} (nothing: no shell ever runs the argv). The default template is
// [${interpreter}, ${program}, ${args}]. Each value must pass CheckValue.
func (s Spec) Argv(programDir string, args []Arg) ([]string, error) {
	tmpl := s.Command
	if tmpl == nil {
		tmpl = defaultCommand
	}
	if s.Program == "" && slices.Contains(tmpl, macroProgram) {
		return nil, &fielderr.Error{Field: "trainer.program", Value: "", Reason: "is required", Line: s.Line}
	}
	path, _ := s.ProgramPath(programDir)
	prog, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("program: %s: %w", s.Program, err)
	}
	for _, a := range args {
		if err := CheckValue(a.Key, a.Value); err != nil {
			return nil, err
		}
	}
	var argv []string
	for i, t := range tmpl {
		switch t {
		case macroInterpreter:
			if s.Interpreter != "" {
				argv = append(argv, s.Interpreter)
			}
		case macroProgram:
			argv = append(argv, prog)
		case macroArgs:
			for _, a := range args {
				argv = append(argv, "--"+a.Key+"="+Format(a.Value))
			}
		case macroArgsNoHyphens:
			for _, a := range args {
				argv = append(argv, a.Key+"="+Format(a.Value))
			}
		case macroArgsNoBooleanFlags:
			for _, a := range args {
				switch b, isBool := a.Value.(bool); {
				case isBool && b:
					argv = append(argv, "--"+a.Key)
				case !isBool:
					argv = append(argv, "--"+a.Key+"="+Format(a.Value))
				}
			}
		case macroArgsJSON:
			j, err := argsJSON(args)
			if err != nil {
				return nil, err
			}
			argv = append(argv, j)
		case macroEnv:
		default:
			if strings.Contains(t, "${") {
				return nil, &fielderr.Error{Field: fmt.Sprintf("trainer.command[%d]", i), Value: t, Reason: "unknown macro", Line: s.Line}
			}
			argv = append(argv, t)
		}
	}
	if len(argv) == 0 {
		return nil, &fielderr.Error{Field: "trainer.command", Value: strings.Join(tmpl, " "), Reason: "expands to an empty argv", Line: s.Line}
	}
	return argv, nil
}

// argsJSON is args as one JSON object, its keys in the order given.
func argsJSON(args []Arg) (string, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, a := range args {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, _ := marshal(a.Key)
		v, err := marshal(a.Value)
		if err != nil {
			return "", &fielderr.Error{Field: a.Key, Value: a.Value, Reason: "has no JSON form: " + err.Error()}
		}
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.String(), nil
}
