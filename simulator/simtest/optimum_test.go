package simtest_test

import (
	"testing"

	"github.com/tidal-autoscaler/tidal/simulator/simtest"
)

func TestOptimumOnKnownCases(t *testing.T) {
	for _, tc := range []struct {
		name  string
		items []simtest.Item
		want  int
	}{
		{"three thirds and a half", []simtest.Item{{CPU: 1500, Mem: 1, Zone: -1, Anti: -1, Workload: 0}, {CPU: 1500, Mem: 1, Zone: -1, Anti: -1, Workload: 0},
			{CPU: 2500, Mem: 1, Zone: -1, Anti: -1, Workload: 1}, {CPU: 2500, Mem: 1, Zone: -1, Anti: -1, Workload: 1}}, 2},
		{"zones split what would fit", []simtest.Item{{CPU: 1000, Mem: 1, Zone: 0, Anti: -1, Workload: 0}, {CPU: 1000, Mem: 1, Zone: 1, Anti: -1, Workload: 1}}, 2},
		{"anti-affinity", []simtest.Item{{CPU: 100, Mem: 1, Zone: -1, Anti: 0, Workload: 0}, {CPU: 100, Mem: 1, Zone: -1, Anti: 0, Workload: 0},
			{CPU: 100, Mem: 1, Zone: -1, Anti: 0, Workload: 0}}, 3},
		{"memory binds", []simtest.Item{{CPU: 100, Mem: 9000, Zone: -1, Anti: -1, Workload: 0}, {CPU: 100, Mem: 9000, Zone: -1, Anti: -1, Workload: 0},
			{CPU: 100, Mem: 7000, Zone: -1, Anti: -1, Workload: 1}, {CPU: 100, Mem: 7000, Zone: -1, Anti: -1, Workload: 1}}, 2},
		// First fit decreasing needs 3 here; 2 suffice (2+1+1, 1.5+1.5+1).
		{"first fit is not optimal", []simtest.Item{{CPU: 2000, Mem: 1, Zone: -1, Anti: -1, Workload: 0},
			{CPU: 1500, Mem: 1, Zone: -1, Anti: -1, Workload: 1}, {CPU: 1500, Mem: 1, Zone: -1, Anti: -1, Workload: 1},
			{CPU: 1000, Mem: 1, Zone: -1, Anti: -1, Workload: 2}, {CPU: 1000, Mem: 1, Zone: -1, Anti: -1, Workload: 2},
			{CPU: 1000, Mem: 1, Zone: -1, Anti: -1, Workload: 2}}, 2},
		{"a pinned pod fixes its node's zone", []simtest.Item{{CPU: 2000, Mem: 1, Zone: 0, Anti: -1, Workload: 0}, {CPU: 2000, Mem: 1, Zone: -1, Anti: -1, Workload: 1},
			{CPU: 2000, Mem: 1, Zone: 1, Anti: -1, Workload: 2}, {CPU: 2000, Mem: 1, Zone: -1, Anti: -1, Workload: 1}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, proven := simtest.Optimum(tc.items, 4000, 16384, 1_000_000)
			if got != tc.want || !proven {
				t.Fatalf("optimum = %d (proven %v), want %d", got, proven, tc.want)
			}
		})
	}
}
