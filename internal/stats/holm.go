package stats

import (
	"cmp"
	"slices"
)

// Holm returns the p-values ps adjusted for multiplicity by Holm's step-down method, in
// the order given: with the m p-values sorted p(1) ≤ … ≤ p(m), the adjusted p(i) is
// max over j ≤ i of min(1, (m − j + 1)·p(j)). Rejecting each hypothesis whose adjusted
// p-value is at most α keeps the chance of any false rejection among the m at most α,
// whatever their dependence (Holm 1979).
func Holm(ps []float64) []float64 {
	m := len(ps)
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ps[a], ps[b]) })
	out := make([]float64, m)
	running := 0.0
	for rank, i := range order {
		running = max(running, min(1, float64(m-rank)*ps[i]))
		out[i] = running
	}
	return out
}
