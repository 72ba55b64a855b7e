package core

import (
	"testing"

	"github.com/tidal-autoscaler/tidal/core/scaleup"
)

// The scale-up's log line names the packing and, when measured, the node
// counts of the plan and of the scheduler's own placement.
func TestPackingOf(t *testing.T) {
	for _, tc := range []struct {
		plan scaleup.Plan
		want string
	}{
		{scaleup.Plan{}, "rounds"},
		{scaleup.Plan{Planner: "largest-first", GreedyNodes: 7}, "largest-first (rounds: 7 nodes)"},
		{scaleup.Plan{PlanNodes: 6, SchedulerNodes: 8}, "rounds; plan 6 nodes, scheduler's placement 8"},
		{scaleup.Plan{Planner: "largest-first", GreedyNodes: 7, PlanNodes: 6, SchedulerNodes: 6}, "largest-first (rounds: 7 nodes); plan 6 nodes, scheduler's placement 6"},
	} {
		if got := packingOf(&tc.plan); got != tc.want {
			t.Errorf("packingOf(%+v) = %q, want %q", tc.plan, got, tc.want)
		}
	}
}
