package scaleup

import "testing"

// askedAgain decides for the mix, then again while the plan's nodes are
// upcoming (the same pods still pending), and returns the nodes of the
// plan and the nodes the second decision asks for besides.
func askedAgain(t *testing.T, m mix, greedyOnly bool) (planned, again int, planner string) {
	c := newCluster(t)
	for _, z := range mixZones {
		c.group("pool-"+z, "4", "16Gi", z, 0, 100)
	}
	c.pending = m.pods
	only := func(in *Input) { in.greedyOnly = greedyOnly }
	plan := c.decide("least-waste", only)
	for _, u := range plan.ScaleUps {
		for i := range c.groups {
			if c.groups[i].ID == u.Group {
				c.groups[i].Target += u.To - u.From
				c.groups[i].Upcoming += u.To - u.From
			}
		}
	}
	return addedNodes(plan), addedNodes(c.decide("least-waste", only)), plan.Planner
}

// TestWholePlanStandsWhileItsNodesCome: a whole-plan packing is adopted
// only when the decision made again while its nodes are upcoming places
// its pods on them (largest first) and asks for nothing more: on every
// seeded mix, the plan with packings compared makes that decision ask for
// no more nodes than the rounds' own plan does.
func TestWholePlanStandsWhileItsNodesCome(t *testing.T) {
	var whole, rounds int
	for seed := uint64(1); seed <= mixSeeds; seed++ {
		m := newMix(seed)
		_, w, planner := askedAgain(t, m, false)
		_, r, _ := askedAgain(t, m, true)
		if w > r {
			t.Errorf("seed %d: the next decision asks for %d more nodes after packing %q, %d after the rounds' plan", seed, w, planner, r)
		}
		whole += w
		rounds += r
	}
	t.Logf("%d seeds: asked for again while the nodes come: %d nodes (rounds alone: %d)", mixSeeds, whole, rounds)
}
