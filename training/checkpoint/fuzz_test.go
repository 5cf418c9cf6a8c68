package checkpoint

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecode feeds Decode arbitrary bytes, seeded with valid checkpoints and damaged
// copies. It must never panic; every error wraps ErrInvalid; a checkpoint it accepts must
// encode, and decode again to the same bytes. The seeds run as part of the ordinary tests.
// The seeds are small files: fuzz with a bounded minimisation, as
//
//	go test -run '^$' -fuzz FuzzDecode -fuzztime 60s -fuzzminimizetime 100x ./training/checkpoint
func FuzzDecode(f *testing.F) {
	for _, preset := range []string{"nano", "nano-gpt2"} {
		enc, err := sample(f, preset, 3).Encode()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(enc)
		f.Add(enc[:len(enc)/2])
		flipped := bytes.Clone(enc)
		flipped[20] ^= 1
		f.Add(flipped)
		f.Add(bytes.Replace(enc, []byte(`"sfsweep.version":"1"`), []byte(`"sfsweep.version":"9"`), 1))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		enc, err := c.Encode()
		if err != nil {
			t.Fatalf("Encode of a decoded checkpoint: %v", err)
		}
		back, err := Decode(enc)
		if err != nil {
			t.Fatalf("Decode of a re-encoded checkpoint: %v", err)
		}
		again, err := back.Encode()
		if err != nil || !bytes.Equal(again, enc) {
			t.Fatalf("encoding is not stable after a round trip (%v)", err)
		}
	})
}
