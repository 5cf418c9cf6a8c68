package training

import (
	"strings"
	"testing"
)

// FuzzParseConfig: any run config ends in a valid config or an error naming something,
// never a panic; a config that parses validates again after a JSON-free round trip
// through its own defaults.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(tinyYAML))
	for _, s := range []string{
		"", "model: [", "model: tiny-llama\nsteps: -1", "optimizer: {name: sfadamw, lr: .inf}",
		strings.Replace(tinyYAML, "beta1: 0.95", "beta1: 1", 1),
		strings.Replace(tinyYAML, "batch_tokens: 32", "batch_tokens: 9223372036854775807", 1),
		strings.Replace(tinyYAML, "model: micro-llama", "model_config: {arch: llama, vocab: 0, dim: 8, layers: 1, heads: 3, context: 8, hidden: 8, batch: 1}", 1),
		strings.Replace(tinyYAML, "seed: 1", "seed: -1", 1),
		strings.Replace(tinyYAML, "seed: 1", "seed: 1\nmicro_batch: 4611686018427387904", 1),
		strings.Repeat("a:\n ", 50),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		c, err := ParseConfig(src)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if err := c.WithDefaults().Validate(); err != nil {
			t.Fatalf("a parsed config does not validate: %v", err)
		}
		if c.Accum() < 1 {
			t.Fatalf("accumulation %d", c.Accum())
		}
		_ = c.Hash()
	})
}
