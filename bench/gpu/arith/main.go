// Command arith tells whether a candidate arithmetic of the cuda backend trains as well as
// the one it would replace: bench/gpu/check.sh's arith stage trains llama-124m with each
// arm of SFSWEEP_CUDA_FAST over the same seeds, and this reads the results it leaves,
// OUTDIR/arith-ARM-SEED.json (sfsweep train -json), pairs each arm's final validation
// loss with the base arm's of the same seed (same initial weights, same batches) and
// tests equivalence within a margin: Schuirmann's two one-sided tests at 5% each, the 90%
// confidence interval of the mean paired difference inside ±margin
// (internal/stats.Paired.TOST). The margin is relative to the base arm's mean loss. A
// difference too noisy to bound reads "not shown equivalent", never "the same".
//
//	go run ./bench/gpu/arith [-base default] [-margin 0.005] OUTDIR
//
// It exits 1 when an arm is not shown equivalent, 2 on bad input.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/sfsweep/sfsweep/internal/stats"
)

func main() {
	base := flag.String("base", "default", "the arm the others are compared with")
	margin := flag.Float64("margin", 0.005, "the equivalence margin, relative to the base arm's mean final validation loss")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: arith [-base ARM] [-margin M] OUTDIR\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	ok, err := run(os.Stdout, flag.Arg(0), *base, *margin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "arith:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

// result is what arith reads of sfsweep train -json's output.
type result struct {
	Status  string             `json:"status"`
	Primary string             `json:"primary"`
	Val     map[string]float64 `json:"val_loss"`
	Steps   int                `json:"steps"`
	Tokens  int64              `json:"tokens"`
}

var name = regexp.MustCompile(`^arith-([A-Za-z0-9_]+)-([0-9]+)\.json$`)

// outcome is one run's: its final validation loss at the primary iterate, or why it has
// none (a run that diverged or failed).
type outcome struct {
	loss float64
	why  string // "" for a completed run with a finite loss
}

// load reads dir's results: arm → seed → outcome. A run cut short leaves an empty file,
// which counts as no run.
func load(dir string) (map[string]map[int]outcome, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	arms := map[string]map[int]outcome{}
	for _, e := range entries {
		m := name.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		path := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if len(b) == 0 {
			continue // a run cut short by its call's timeout
		}
		var r result
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if r.Status == "" {
			return nil, fmt.Errorf("%s: no status: not the output of sfsweep train -json", path)
		}
		o := outcome{}
		loss, found := r.Val[r.Primary]
		switch {
		case r.Status != "completed":
			o.why = r.Status
		case !found || math.IsNaN(loss) || math.IsInf(loss, 0):
			o.why = fmt.Sprintf("completed without a finite validation loss at %q", r.Primary)
		default:
			o.loss = loss
		}
		seed, _ := strconv.Atoi(m[2])
		if arms[m[1]] == nil {
			arms[m[1]] = map[int]outcome{}
		}
		arms[m[1]][seed] = o
	}
	if len(arms) == 0 {
		return nil, fmt.Errorf("%s holds no arith-ARM-SEED.json", dir)
	}
	return arms, nil
}

// run prints, for each arm but base, its final losses beside base's on the seeds both
// have, the mean paired difference with its 90% interval, and the verdict of the test of
// equivalence within ±margin·mean(base); it reports whether every arm was shown
// equivalent. A pair with a run that diverged or failed is never shown equivalent: the
// verdict names it.
func run(w io.Writer, dir, base string, margin float64) (bool, error) {
	if !(margin > 0) {
		return false, fmt.Errorf("margin = %v, must be > 0", margin)
	}
	arms, err := load(dir)
	if err != nil {
		return false, err
	}
	ref, found := arms[base]
	if !found {
		return false, fmt.Errorf("%s holds no run of the base arm %q", dir, base)
	}
	var others []string
	for a := range arms {
		if a != base {
			others = append(others, a)
		}
	}
	if len(others) == 0 {
		return false, errors.New("no arm to compare with the base arm")
	}
	sort.Strings(others)
	all := true
	for _, arm := range others {
		var seeds []int
		for s := range arms[arm] {
			if _, ok := ref[s]; ok {
				seeds = append(seeds, s)
			}
		}
		slices.Sort(seeds)
		var a, b []float64
		var broken []string // the runs of a pair that diverged or failed
		fmt.Fprintf(w, "%s against %s, final validation loss:\n| seed | %s | %s | difference |\n|---|---|---|---|\n", arm, base, base, arm)
		for _, s := range seeds {
			oa, ob := arms[arm][s], ref[s]
			if oa.why != "" || ob.why != "" {
				for _, x := range []struct {
					arm string
					o   outcome
				}{{base, ob}, {arm, oa}} {
					if x.o.why != "" {
						broken = append(broken, fmt.Sprintf("seed %d's %s run %s", s, x.arm, x.o.why))
					}
				}
				fmt.Fprintf(w, "| %d | %s | %s | |\n", s, cell(ob), cell(oa))
				continue
			}
			a, b = append(a, oa.loss), append(b, ob.loss)
			fmt.Fprintf(w, "| %d | %.5f | %.5f | %+.5f |\n", s, ob.loss, oa.loss, oa.loss-ob.loss)
		}
		if len(broken) > 0 {
			all = false
			fmt.Fprintf(w, "== arith %s: NOT SHOWN EQUIVALENT: %s\n", arm, strings.Join(broken, "; "))
			continue
		}
		p := stats.Compare(a, b)
		delta := margin * stats.Summarize(b).Mean
		tost := p.TOST(delta)
		// the interval TOST at 5% each side amounts to: 90%, t_{0.95, N−1}
		lo, hi := math.Inf(-1), math.Inf(1)
		if p.N >= 2 {
			t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(p.N - 1)}.Quantile(1 - stats.Level)
			lo, hi = p.Diff-t*p.SE, p.Diff+t*p.SE
		}
		verdict := "equivalent"
		if !(tost < stats.Level) {
			verdict, all = "NOT SHOWN EQUIVALENT", false
		}
		fmt.Fprintf(w, "== arith %s: %s within ±%.5f (%.2f%% of %s's mean %.5f) over %d seeds: mean difference %+.5f, 90%% interval [%+.5f, %+.5f], TOST p = %.3g%s\n",
			arm, verdict, delta, 100*margin, base, stats.Summarize(b).Mean, p.N, p.Diff, lo, hi, tost, plan(p, delta))
	}
	return all, nil
}

// maxSeeds bounds the seeds plan looks for.
const maxSeeds = 1000

// plan says how many seeds would put the 90% interval inside ±delta if the mean paired
// difference and its spread stayed what p measured: the least n with
// |diff| + t_{0.95, n−1}·sd/√n < delta. It sizes the next run; it is no verdict.
func plan(p stats.Paired, delta float64) string {
	if p.N < 2 {
		return ""
	}
	sd := p.SE * math.Sqrt(float64(p.N))
	if math.Abs(p.Diff) >= delta {
		return fmt.Sprintf("; sd of the differences %.5f: no number of seeds would show it, the mean difference is at or beyond the margin", sd)
	}
	for n := 2; n <= maxSeeds; n++ {
		t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(1 - stats.Level)
		if math.Abs(p.Diff)+t*sd/math.Sqrt(float64(n)) < delta {
			return fmt.Sprintf("; sd of the differences %.5f: at this mean and spread, %d seeds would show it", sd, n)
		}
	}
	return fmt.Sprintf("; sd of the differences %.5f: at this mean and spread, more than %d seeds would be needed", sd, maxSeeds)
}

// cell is a run's loss for the table, or why it has none.
func cell(o outcome) string {
	if o.why != "" {
		return o.why
	}
	return fmt.Sprintf("%.5f", o.loss)
}
