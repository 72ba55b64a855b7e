package scaledown

import (
	"context"
	"testing"

	"github.com/tidal-autoscaler/tidal/benchgen"
	"github.com/tidal-autoscaler/tidal/benchgen/benchload"
)

// TestPlanForgetsChecks checks that a plan holds no pod's check once the
// node the pod was moved onto has been considered: at the end of a plan
// on S1, where removals move pods onto candidates considered later, none
// is left.
func TestPlanForgetsChecks(t *testing.T) {
	in := benchInputs(t, benchload.Cluster(t, benchgen.S1()))[0]
	snap := in.Checker.Snapshot()
	snap.Fork()
	defer snap.Revert()
	in.Candidates = sortedCandidates(in.Candidates)
	p := newPlanner(in, nil, nil)
	if err := p.considerAll(context.Background(), p.order()); err != nil {
		t.Fatal(err)
	}
	if len(p.plan.Unneeded) == 0 {
		t.Fatal("no node unneeded: the test checks nothing")
	}
	if len(p.checks) != 0 {
		t.Errorf("%d checks kept after every candidate was considered", len(p.checks))
	}
}
