package program

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// Metric is one metrics line a program appends (docs/trainer.md, "Metrics"). A loss the
// line does not carry is nil.
type Metric struct {
	Step      int
	Tokens    int64
	LR        *float64
	TrainLoss *float64
	ValLoss   *float64
	TestLoss  *float64
	Val       map[string]float64 // validation loss per iterate
	Named     map[string]float64 // any other number: val_ppl, accuracy
}

// The keys a metrics line gives a meaning to.
const (
	keyStep      = "step"
	keyTokens    = "tokens"
	keyLR        = "lr"
	keyTrainLoss = "train_loss"
	keyValLoss   = "val_loss"
	keyTestLoss  = "test_loss"
	keyVal       = "val"
)

// The numbers Python's json writes for non-finite floats are not JSON; ParseMetric turns
// them into number literals encoding/json accepts and that parse back to what they were.
// nanLiteral overflows too, so a program that writes it literally gets a non-finite loss
// either way.
const nanLiteral = "1e99999999999999999999"

var nonFinite = []struct{ python, json string }{
	{"-Infinity", "-1e999"},
	{"Infinity", "1e999"},
	{"NaN", nanLiteral},
}

// ParseMetric reads one metrics line: a JSON object with an integer step >= 0. It accepts
// NaN, Infinity and -Infinity as Python's json writes them, and a null as a key left out.
// A known key of the wrong type is an error; a key it does not know is a named metric if
// it is a number and is ignored otherwise.
func ParseMetric(line []byte) (Metric, error) {
	var m Metric
	dec := json.NewDecoder(bytes.NewReader(pythonNumbers(line)))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return m, errors.New("not a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return m, errors.New("more than one JSON value on the line")
	}
	step, ok := obj[keyStep]
	if !ok || step == nil {
		return m, errors.New("no step")
	}
	s, err := wholeNumber(step)
	if err != nil || s < 0 || s > 1<<53 {
		return m, fmt.Errorf("step %s: want an integer >= 0", short(step))
	}
	m.Step = int(s)
	for k, v := range obj {
		if v == nil {
			continue
		}
		var err error
		switch k {
		case keyStep:
		case keyTokens:
			m.Tokens, err = wholeNumber(v)
			if err == nil && m.Tokens < 0 {
				err = errors.New("negative")
			}
		case keyLR:
			m.LR, err = floatPtr(v)
		case keyTrainLoss:
			m.TrainLoss, err = floatPtr(v)
		case keyValLoss:
			m.ValLoss, err = floatPtr(v)
		case keyTestLoss:
			m.TestLoss, err = floatPtr(v)
		case keyVal:
			m.Val, err = floatMap(v)
		default:
			if n, ok := v.(json.Number); ok {
				if m.Named == nil {
					m.Named = map[string]float64{}
				}
				m.Named[k] = number(n)
			}
		}
		if err != nil {
			return Metric{}, fmt.Errorf("%s %s: %v", k, short(v), err)
		}
	}
	return m, nil
}

// Finite reports whether the train and validation losses of m are finite; a program whose
// loss is not has diverged. Losses m does not carry count as finite.
func (m Metric) Finite() bool {
	for _, p := range []*float64{m.TrainLoss, m.ValLoss} {
		if p != nil && (math.IsNaN(*p) || math.IsInf(*p, 0)) {
			return false
		}
	}
	return true
}

// HasVal reports whether m carries a validation loss: the result of a run.
func (m Metric) HasVal() bool { return m.ValLoss != nil || len(m.Val) > 0 }

// pythonNumbers rewrites NaN, Infinity and -Infinity outside strings into JSON numbers.
func pythonNumbers(line []byte) []byte {
	if !bytes.Contains(line, []byte("NaN")) && !bytes.Contains(line, []byte("Infinity")) {
		return line
	}
	out := make([]byte, 0, len(line)+32)
	inString, escaped := false, false
next:
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		default:
			for _, nf := range nonFinite {
				if bytes.HasPrefix(line[i:], []byte(nf.python)) {
					out = append(out, nf.json...)
					i += len(nf.python) - 1
					continue next
				}
			}
		}
		out = append(out, c)
	}
	return out
}

// number is n as a float64: an overflowing literal is the infinity it stands for.
func number(n json.Number) float64 {
	if string(n) == nanLiteral {
		return math.NaN()
	}
	f, _ := strconv.ParseFloat(string(n), 64) // out of range: ±Inf or 0, as the literal means
	return f
}

func floatPtr(v any) (*float64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return nil, errors.New("want a number")
	}
	f := number(n)
	return &f, nil
}

func floatMap(v any) (map[string]float64, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New(`want an object of losses by iterate, {"x": 3.87}`)
	}
	out := make(map[string]float64, len(obj))
	for k, x := range obj {
		n, ok := x.(json.Number)
		if !ok {
			return nil, fmt.Errorf("%s: want a number", k)
		}
		out[k] = number(n)
	}
	return out, nil
}

// wholeNumber is v as an integer: a JSON number with no fractional part (30 or 30.0).
func wholeNumber(v any) (int64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, errors.New("want an integer")
	}
	if i, err := n.Int64(); err == nil {
		return i, nil
	}
	f := number(n)
	if f != math.Trunc(f) || math.IsInf(f, 0) || math.Abs(f) > 1<<53 {
		return 0, errors.New("want an integer")
	}
	return int64(f), nil
}

// short is a value as an error shows it, at most 40 bytes.
func short(v any) string {
	s := fmt.Sprint(v)
	if b, err := marshal(v); err == nil {
		s = string(b)
	}
	if s == `"`+nanLiteral+`"` || s == nanLiteral {
		s = "NaN"
	}
	return truncate(s, 40)
}

// truncate is s cut to at most n bytes, on a rune boundary, marked with "...".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
