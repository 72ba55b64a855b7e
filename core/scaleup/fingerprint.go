package scaleup

import (
	"slices"
	"sort"
)

// moved returns the values of seq (distinct indices of an earlier list)
// that are out of their earlier order: those not in a longest increasing
// subsequence of seq, so that the others keep their order.
func moved(seq []int) []int {
	if slices.IsSorted(seq) {
		// Nothing moved (the usual case): the values are distinct.
		return nil
	}
	// tails[k] is the index in seq of the smallest last value of an
	// increasing subsequence of length k+1; prev links each to the one
	// before it.
	var tails []int
	prev := make([]int, len(seq))
	for i, v := range seq {
		k := sort.Search(len(tails), func(k int) bool { return seq[tails[k]] >= v })
		prev[i] = -1
		if k > 0 {
			prev[i] = tails[k-1]
		}
		if k == len(tails) {
			tails = append(tails, i)
		} else {
			tails[k] = i
		}
	}
	keep := make([]bool, len(seq))
	if len(tails) > 0 {
		for i := tails[len(tails)-1]; i >= 0; i = prev[i] {
			keep[i] = true
		}
	}
	var out []int
	for i, v := range seq {
		if !keep[i] {
			out = append(out, v)
		}
	}
	return out
}
