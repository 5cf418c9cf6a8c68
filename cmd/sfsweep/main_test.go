package main

import (
	"os"
	"testing"
)

// reexecEnv, set in the environment of the test binary, makes it run as the sfsweep
// command with its own arguments instead of running the tests: fault-injection tests start
// workers and servers as separate processes they can kill.
const reexecEnv = "SFSWEEP_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(reexecEnv) == "1" {
		os.Unsetenv(reexecEnv)
		main() // exits
	}
	os.Exit(m.Run())
}
