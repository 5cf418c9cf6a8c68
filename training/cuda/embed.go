package cuda

// embedIndex lists, for encoder_backward_rows (embedding.cu), the rows of each token of a
// micro-batch: idx (3n+2, n = len(tokens)) gets rows (n), the row indices grouped by token
// in the order the tokens first appear and ascending within a token; ids (n), the distinct
// tokens in that order; off (n+1), token u's rows being rows[off[u]..off[u+1]); and at
// 3n+1 the number of distinct tokens. seen (one per vocabulary entry) must be zero, and is
// zero again on return. It takes O(n) time, whatever the vocabulary.
func embedIndex(tokens, idx, seen []int32) {
	n := len(tokens)
	rows, ids, off := idx[:n], idx[n:2*n], idx[2*n:3*n+1]
	count := 0
	for _, t := range tokens {
		if seen[t] == 0 {
			ids[count] = t
			count++
		}
		seen[t]++
	}
	// seen becomes each token's next slot in rows
	off[0] = 0
	for u, t := range ids[:count] {
		off[u+1] = off[u] + seen[t]
		seen[t] = off[u]
	}
	for r, t := range tokens {
		rows[seen[t]] = int32(r)
		seen[t]++
	}
	for _, t := range ids[:count] {
		seen[t] = 0
	}
	idx[3*n+1] = int32(count)
}
