package search

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// A diverged candidate's value, +Inf, has no JSON number: Candidate writes its values
// with score, which spells an infinity as a string.

// score is a value of Candidate.Values in JSON: a finite number as the shortest decimal
// that parses back to the same float64, an infinity as the string "+Inf" or "-Inf".
type score float64

func (v score) MarshalJSON() ([]byte, error) {
	f := float64(v)
	switch {
	case math.IsInf(f, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-Inf"`), nil
	case math.IsNaN(f):
		return nil, fmt.Errorf("search value is NaN")
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

func (v *score) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case `"+Inf"`:
		*v = score(math.Inf(1))
		return nil
	case `"-Inf"`:
		*v = score(math.Inf(-1))
		return nil
	}
	return json.Unmarshal(b, (*float64)(v))
}

// candidateJSON is Candidate with its values as scores: the outer Values field hides the
// embedded one.
type candidateJSON struct {
	*plainCandidate
	Values map[int]score `json:"values"`
}

type plainCandidate Candidate // Candidate without its JSON methods

// MarshalJSON writes c, a diverged value as "+Inf".
func (c Candidate) MarshalJSON() ([]byte, error) {
	vs := make(map[int]score, len(c.Values))
	for step, v := range c.Values {
		vs[step] = score(v)
	}
	return json.Marshal(candidateJSON{(*plainCandidate)(&c), vs})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (c *Candidate) UnmarshalJSON(b []byte) error {
	j := candidateJSON{plainCandidate: (*plainCandidate)(c)}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	c.Values = make(map[int]float64, len(j.Values))
	for step, v := range j.Values {
		c.Values[step] = float64(v)
	}
	return nil
}
