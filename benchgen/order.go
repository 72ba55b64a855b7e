package benchgen

import (
	"math/rand/v2"
	"slices"
)

// ListerOrder returns a copy of items in the order a lister returns them:
// an informer's cache is a map, so a List comes in random order, another
// one on every call. r draws the order.
func ListerOrder[T any](r *rand.Rand, items []T) []T {
	out := slices.Clone(items)
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}
