package program

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary is also the program the tests run: with PROGRAM_TEST_MODE=fake it is a
// fake trainer that follows FAKE_SCRIPT, one command a line:
//
//	line JSON        append a metrics line
//	partial TEXT     append TEXT without a newline
//	stderr TEXT      print TEXT to stderr (stdout TEXT: to stdout)
//	sleep DURATION   sleep
//	loop             append a line with a validation loss every 10ms, steps 1, 2, ...
//	hang             sleep forever
//	exit CODE        exit with CODE
//	kill             SIGKILL itself
//	ignoreterm       ignore SIGTERM from here on
//	child            start a child in the group that ignores SIGTERM; wait for its pid in child.pid
//	pidfile          write the pid to child.pid
//	env              write the environment to env.json, the arguments to argv.json
//	ckpt NAME TEXT   write $SFSWEEP_CHECKPOINT_DIR/NAME through a .tmp file and a rename
//	train N          steps 1..N as docs/trainer.md asks: each step's line, then its
//	                 checkpoint step-S and latest (renamed over), with no pause
//
// At the end of the script it exits 0.
func TestMain(m *testing.M) {
	if os.Getenv("PROGRAM_TEST_MODE") == "fake" {
		fake(os.Getenv("FAKE_SCRIPT"))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func fake(script string) {
	metrics := os.Getenv("SFSWEEP_METRICS")
	appendTo := func(s string) {
		f, err := os.OpenFile(metrics, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		must(err)
		_, err = f.WriteString(s)
		must(err)
		must(f.Close())
	}
	for cmd := range strings.SplitSeq(script, "\n") {
		op, arg, _ := strings.Cut(strings.TrimSpace(cmd), " ")
		switch op {
		case "":
		case "line":
			appendTo(arg + "\n")
		case "partial":
			appendTo(arg)
		case "stderr":
			fmt.Fprintln(os.Stderr, arg)
		case "stdout":
			fmt.Println(arg)
		case "sleep":
			d, err := time.ParseDuration(arg)
			must(err)
			time.Sleep(d)
		case "loop":
			for step := 1; ; step++ {
				appendTo(fmt.Sprintf(`{"step": %d, "train_loss": 3.5, "val_loss": 3.6}`+"\n", step))
				time.Sleep(10 * time.Millisecond)
			}
		case "hang":
			for {
				time.Sleep(time.Hour)
			}
		case "exit":
			code, err := strconv.Atoi(arg)
			must(err)
			os.Exit(code)
		case "kill":
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			for {
				time.Sleep(time.Hour)
			}
		case "ignoreterm":
			signal.Ignore(syscall.SIGTERM)
		case "child", "straychild": // a straychild leaves the group, in a session of its own
			self, err := os.Executable()
			must(err)
			c := exec.Command(self)
			c.Env = []string{"PROGRAM_TEST_MODE=fake", "FAKE_SCRIPT=ignoreterm\npidfile\nhang"}
			c.SysProcAttr = &syscall.SysProcAttr{Setsid: op == "straychild"}
			must(c.Start())
			for { // until the child ignores SIGTERM
				if _, err := os.Stat("child.pid"); err == nil {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
		case "pidfile":
			must(os.WriteFile("child.pid.tmp", []byte(strconv.Itoa(os.Getpid())), 0o644))
			must(os.Rename("child.pid.tmp", "child.pid"))
		case "env":
			b, err := json.Marshal(os.Environ())
			must(err)
			must(os.WriteFile("env.json", b, 0o644))
			b, err = json.Marshal(os.Args[1:])
			must(err)
			must(os.WriteFile("argv.json", b, 0o644))
		case "ckpt":
			name, text, _ := strings.Cut(arg, " ")
			checkpoint(name, text)
		case "train":
			n, err := strconv.Atoi(arg)
			must(err)
			for step := 1; step <= n; step++ {
				appendTo(fmt.Sprintf(`{"step": %d, "train_loss": 3.5, "val_loss": 3.6}`+"\n", step))
				checkpoint(fmt.Sprintf("step-%d", step), strconv.Itoa(step))
				checkpoint("latest", strconv.Itoa(step))
			}
		default:
			must(fmt.Errorf("fake trainer: unknown command %q", op))
		}
	}
}

// checkpoint writes $SFSWEEP_CHECKPOINT_DIR/name through a .tmp file and a rename.
func checkpoint(name, text string) {
	p := filepath.Join(os.Getenv("SFSWEEP_CHECKPOINT_DIR"), name)
	must(os.MkdirAll(filepath.Dir(p), 0o755))
	must(os.WriteFile(p+".tmp", []byte(text), 0o644))
	must(os.Rename(p+".tmp", p))
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(99)
	}
}
