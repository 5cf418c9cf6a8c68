package search_test

import (
	"fmt"
	"math"

	"github.com/sfsweep/sfsweep/search"
)

// Example is a caller's loop: ask for jobs, suggest a configuration for each new one,
// train, report. Here training is a formula, and ASHA keeps the best third of each rung.
func Example() {
	space := search.Space{{Name: "lr", Kind: search.LogUniform, Min: 1e-5, Max: 1e-1}}
	sampler, err := search.NewSampler(search.MethodTPE, space, 1)
	if err != nil {
		panic(err)
	}
	s, err := search.NewState(search.Config{Rule: search.ASHA, Rungs: []int{10, 30, 90}, Eta: 3, Budget: 27, Parallel: 4})
	if err != nil {
		panic(err)
	}
	loss := func(p search.Point, step int) float64 { // least at lr 1e-3, falling with steps
		d := math.Log10(p["lr"]) + 3
		return d*d + 100/float64(step)
	}
	var running []search.Job
	for {
		for {
			job, ok := s.Next()
			if !ok {
				break
			}
			if job.New {
				var history []search.Observation // the candidates so far, as the sampler sees them
				for _, c := range s.Candidates {
					history = append(history, c.Observation())
				}
				p, err := sampler.Suggest(len(s.Candidates), history)
				if err != nil {
					panic(err)
				}
				s.Add(0, p)
				continue
			}
			running = append(running, job)
		}
		if len(running) == 0 {
			break
		}
		job := running[0] // the oldest job ends first
		running = running[1:]
		p := s.Candidates[job.Candidate].Point
		if err := s.Apply(search.Event{Candidate: job.Candidate, Step: job.Until, Value: loss(p, job.Until)}); err != nil {
			panic(err)
		}
	}
	completed := 0
	for _, c := range s.Candidates {
		if c.Status == search.StatusCompleted {
			completed++
		}
	}
	fmt.Println("done:", s.Done(), "configurations:", len(s.Candidates), "completed:", completed > 0)
	// Output: done: true configurations: 27 completed: true
}
