package benchgen

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Params are the inputs of the generator. All fields but the size ones keep
// the values of the spec in the presets; changing them gives a cluster that is
// no longer one of the standard benchmark sizes.
type Params struct {
	Seed uint64 // RNG seed (42 in the presets)
	N    int    // nodes
	M    int    // running pods per node
	P    int    // pending pods
	G    int    // pending groups (one ReplicaSet each)
	K    int    // node groups

	UnderPct int // percentage of nodes drawn as under-utilized
	UnderMin int // lowest utilization % of an under-utilized node
	UnderMax int // highest utilization % of an under-utilized node
	BusyMin  int // lowest utilization % of a busy node
	BusyMax  int // highest utilization % of a busy node
	Jitter   int // per-pod request jitter J, in percent (100±J)
	Apps     int // running ReplicaSets the running pods are spread over
	NGMax    int // max size of every node group
}

// maxKeyItem bounds the item index so that i<<8 stays below the stream bits.
const maxKeyItem = 1 << 40

// withDefaults returns the standard parameters with the given sizes.
func withDefaults(n, m, p, g, k int) Params {
	return Params{
		Seed: 42, N: n, M: m, P: p, G: g, K: k,
		UnderPct: 25, UnderMin: 10, UnderMax: 40,
		BusyMin: 80, BusyMax: 95, Jitter: 5, Apps: 64, NGMax: 100000,
	}
}

// S1 is the small benchmark cluster: 100 nodes, 3,000 running pods.
func S1() Params { return withDefaults(100, 30, 300, 10, 5) }

// S2 is the 1,000-node benchmark cluster with 30,000 running pods.
func S2() Params { return withDefaults(1000, 30, 3000, 30, 10) }

// S3 is the 5,000-node benchmark cluster: 100,000 running and 10,000 pending
// pods.
func S3() Params { return withDefaults(5000, 20, 10000, 50, 20) }

// S4 is the 15,000-node benchmark cluster: 510,000 running pods (34 per
// node, the nearest to 500,000 at or above it), 30,000 pending pods in 100
// groups, 40 node groups.
func S4() Params { return withDefaults(15000, 34, 30000, 100, 40) }

// S5 is the 60,000-node benchmark cluster: 2,040,000 running pods (34 per
// node, the nearest to 2,000,000 at or above it), 100,000 pending pods in
// 200 groups, 100 node groups.
func S5() Params { return withDefaults(60000, 34, 100000, 200, 100) }

// PresetNames lists the names Preset accepts, smallest first.
func PresetNames() []string { return []string{"S1", "S2", "S3", "S4", "S5"} }

// Preset returns the preset with the given name (S1 to S5).
func Preset(name string) (Params, error) {
	switch name {
	case "S1":
		return S1(), nil
	case "S2":
		return S2(), nil
	case "S3":
		return S3(), nil
	case "S4":
		return S4(), nil
	case "S5":
		return S5(), nil
	}
	return Params{}, fmt.Errorf("unknown size %q (accepted: %s)", name, strings.Join(PresetNames(), ", "))
}

// Validate reports parameters the generator cannot honour.
func (p Params) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(p.N >= 0 && p.M >= 0 && p.P >= 0, "N, M and P must not be negative")
	check(p.G >= 1 && p.K >= 1 && p.Apps >= 1, "G, K and Apps must be at least 1")
	check(int64(p.N)*int64(p.M) <= math.MaxInt32 && p.P <= math.MaxInt32,
		"N*M and P must fit in an int32 (ReplicaSet replicas)")
	check(int64(p.G) < maxKeyItem && int64(p.N) < maxKeyItem, "N and G must be below 2^40")
	check(p.UnderPct >= 0 && p.UnderPct <= 100, "UnderPct must be within 0..100")
	check(p.UnderMin >= 0 && p.UnderMin <= p.UnderMax, "need 0 <= UnderMin <= UnderMax")
	check(p.BusyMin >= 0 && p.BusyMin <= p.BusyMax, "need 0 <= BusyMin <= BusyMax")
	check(p.Jitter >= 0 && p.Jitter < 100, "Jitter must be within 0..99")
	check(p.NGMax >= 0, "NGMax must not be negative")
	if p.K >= 1 {
		check(int64(ceilDiv(p.N, p.K)) <= int64(p.NGMax), "a node group would exceed NGMax")
	}
	return errors.Join(errs...)
}

// ceilDiv returns a/b rounded up, for a >= 0 and b > 0.
func ceilDiv(a, b int) int { return (a + b - 1) / b }

// groupSize returns how many of n items fall into bucket b of k when item x
// goes to bucket x%k (also the pending-group count P/G + (g < P%G)).
func groupSize(n, k, b int) int {
	size := n / k
	if b < n%k {
		size++
	}
	return size
}
