package main

import (
	"os"
	"testing"

	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/model"
)

// reexecEnv, set in the environment of the test binary, makes it run as the sfsweep
// command with its own arguments instead of running the tests: fault-injection tests start
// workers and servers as separate processes they can kill.
const reexecEnv = "SFSWEEP_TEST_RUN_MAIN"

// standInCUDAEnv, set with reexecEnv, registers a stand-in "cuda" backend in the process:
// the cpu engine under the cuda name, so that routing by device can be tested end to end
// on a machine without a GPU. Only the test binary has it.
const standInCUDAEnv = "SFSWEEP_TEST_STAND_IN_CUDA"

func TestMain(m *testing.M) {
	if os.Getenv(reexecEnv) == "1" {
		os.Unsetenv(reexecEnv)
		if os.Getenv(standInCUDAEnv) == "1" {
			backend.Register("cuda", func(cfg model.Config, batch, seqLen int) (backend.Engine, error) {
				return backend.New("cpu", cfg, batch, seqLen)
			})
		}
		main() // exits
	}
	os.Exit(m.Run())
}
