package training

import (
	"os"
	"testing"
)

var corpusDir string

func osMkdirTemp() (string, error) {
	d, err := os.MkdirTemp("", "sfsweep-training-test-")
	corpusDir = d
	return d, err
}

func TestMain(m *testing.M) {
	code := m.Run()
	if corpusDir != "" {
		os.RemoveAll(corpusDir)
	}
	os.Exit(code)
}
