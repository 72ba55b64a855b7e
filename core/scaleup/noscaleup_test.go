package scaleup

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tidal-autoscaler/tidal/expander"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// pinned is pods of 3 CPU pinned to zone a, whose group of 4-CPU nodes has
// 1 node (running the given pods) and room for 2 more: one pod per node.
// Another group, in zone b, does not match them.
func pinned(t *testing.T, pods int, running ...string) *cluster {
	c := newCluster(t)
	c.node("small-1", "4", "16Gi", "a", running...)
	c.group("small", "4", "16Gi", "a", 1, 3)
	c.group("other", "4", "16Gi", "b", 0, 10)
	c.pend(pods, "web", "3", "1Gi", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: "a"} })
	return c
}

// A decision that helps part of an equivalence group refuses only the
// rest: of 5 pods, 1 fits the node, 2 get new nodes and 2 never do; each
// pending pod is counted once, as fitting, scaled up for, refused or left
// for lack of time.
func TestNoScaleUpCarriesThePodsLeftUnhelped(t *testing.T) {
	c := pinned(t, 5)
	plan := c.decide("least-waste", nil)
	if got := nodesAdded(plan); got["small"] != 2 || got["other"] != 0 || plan.FitExisting != 1 {
		t.Fatalf("scale-ups %v, %d fit the node: want small +2 and 1 fitting", got, plan.FitExisting)
	}
	if len(plan.NoScaleUp) != 1 || len(plan.NoScaleUp[0].Pods) != 2 {
		t.Fatalf("no scale-up %+v: want the 2 pods left, not the whole group of 5", plan.NoScaleUp)
	}
	r := plan.NoScaleUp[0].Reasons
	if len(r) != 2 || r[ReasonMaxSize] != 1 || r["node(s) didn't match Pod's node affinity/selector"] != 1 {
		t.Fatalf("reasons %v: want 1 max size and 1 selector mismatch", r)
	}
	helped := plan.Helped()
	for _, p := range plan.NoScaleUp[0].Pods {
		if g, ok := helped[p.UID]; ok {
			t.Fatalf("pod %s refused and helped by %s", p.Name, g)
		}
	}
	if n := plan.FitExisting + len(helped) + len(plan.NoScaleUp[0].Pods) + plan.Skipped; n != 5 {
		t.Fatalf("the plan counts %d pods, want each of the 5 once", n)
	}
}

// Once the 2 nodes are asked for and one pod runs on the group's node, the
// 4 pods still pending are 2 waiting for the new nodes and 2 refused; a
// decision reused while nothing changes names this iteration's pods.
func TestNoScaleUpOfAReusedDecisionNamesThisIterationsPods(t *testing.T) {
	c := pinned(t, 4, "3")
	c.groups[0].Target, c.groups[0].Upcoming = 3, 2
	pending := c.pending
	chain, err := expander.ParseChain("least-waste")
	if err != nil {
		t.Fatal(err)
	}
	keys := simulator.NewEquivalenceKeys()
	input := func() Input {
		// The informers hand each iteration new objects for the same pods.
		pods := make([]*corev1.Pod, len(pending))
		for i, p := range pending {
			pods[i] = p.DeepCopy()
		}
		return Input{Checker: c.checker, Pending: keys.Group(pods), Groups: c.groups, Chain: chain,
			ExpanderContext: &expander.Context{Seed: 1}}
	}
	var m Memory
	first, _, err := m.Decide(context.Background(), input())
	if err != nil {
		t.Fatal(err)
	}
	in := input()
	again, reused, err := m.Decide(context.Background(), in)
	if err != nil || !reused {
		t.Fatalf("nothing changed: reused %v, err %v", reused, err)
	}
	for _, plan := range []*Plan{first, again} {
		if len(plan.ScaleUps) != 0 || len(plan.Awaiting) != 2 || len(plan.NoScaleUp) != 1 || len(plan.NoScaleUp[0].Pods) != 2 {
			t.Fatalf("%d scale-ups, %d awaiting, refused %+v: want 2 awaiting the new nodes and 2 refused",
				len(plan.ScaleUps), len(plan.Awaiting), plan.NoScaleUp)
		}
	}
	ours := map[*corev1.Pod]bool{}
	for _, p := range in.Pending[0].Pods {
		ours[p] = true
	}
	seen := map[types.UID]bool{}
	for _, p := range again.NoScaleUp[0].Pods {
		if !ours[p] || again.Awaiting[p.UID] != "" || seen[p.UID] {
			t.Fatalf("reused refusal names pod %s: not this iteration's object, awaiting, or twice", p.Name)
		}
		seen[p.UID] = true
	}
}

// A pod too big for every group is told what it lacks, in the scheduler's
// words, counted per resource over the groups, as Cluster Autoscaler does.
func TestNoScaleUpNamesTheResource(t *testing.T) {
	c := newCluster(t)
	c.group("a", "4", "16Gi", "a", 0, 10)
	c.group("b", "8", "32Gi", "a", 0, 10)
	c.group("big-memory", "16", "2Ti", "a", 0, 10)
	c.pend(1, "cpu", "100", "1Gi", nil)
	c.pend(1, "both", "100", "1Ti", nil)
	plan := c.decide("least-waste", nil)
	if len(plan.ScaleUps) != 0 || len(plan.NoScaleUp) != 2 {
		t.Fatalf("scale-ups %v, refused %d groups: want none and 2", plan.ScaleUps, len(plan.NoScaleUp))
	}
	want := map[string]map[string]int{
		"cpu":  {"Insufficient cpu": 3},
		"both": {"Insufficient cpu": 3, "Insufficient memory": 2},
	}
	for _, n := range plan.NoScaleUp {
		app := n.Pods[0].Labels["app"]
		if len(n.Reasons) != len(want[app]) {
			t.Fatalf("%s: reasons %v, want %v", app, n.Reasons, want[app])
		}
		for reason, count := range want[app] {
			if n.Reasons[reason] != count {
				t.Fatalf("%s: reasons %v, want %v", app, n.Reasons, want[app])
			}
		}
	}
	// Per node group, for explaining one pod, the reasons carry the
	// numbers: what the pod needs and what an empty node of the group has.
	wantBy := map[string]map[string][]string{
		"cpu": {"a": {"Insufficient cpu (needs 100, free 4)"}, "b": {"Insufficient cpu (needs 100, free 8)"},
			"big-memory": {"Insufficient cpu (needs 100, free 16)"}},
		"both": {"a": {"Insufficient cpu (needs 100, free 4)", "Insufficient memory (needs 1Ti, free 16Gi)"},
			"b":          {"Insufficient cpu (needs 100, free 8)", "Insufficient memory (needs 1Ti, free 32Gi)"},
			"big-memory": {"Insufficient cpu (needs 100, free 16)"}},
	}
	for _, n := range plan.NoScaleUp {
		app := n.Pods[0].Labels["app"]
		if !reflect.DeepEqual(n.ByNodeGroup, wantBy[app]) {
			t.Errorf("%s: reasons by node group %q, want %q", app, n.ByNodeGroup, wantBy[app])
		}
	}
}

// Each node group's own reasons stay with the plan, for explaining one pod:
// those of the pods no group helps, and of the groups that could not help
// the pods a scale-up is for.
func TestReasonsByNodeGroup(t *testing.T) {
	plan := pinned(t, 5).decide("least-waste", nil)
	selector := "node(s) didn't match Pod's node affinity/selector"
	if by := plan.NoScaleUp[0].ByNodeGroup; len(by) != 2 || by["small"][0] != ReasonMaxSize || by["other"][0] != selector {
		t.Fatalf("reasons by node group %v: want small at its max size and other not matching", by)
	}
	if len(plan.ScaleUps) != 1 {
		t.Fatalf("scale-ups %+v, want one", plan.ScaleUps)
	}
	if rejected := plan.ScaleUps[0].Rejected; len(rejected) != 1 || len(rejected["other"]) != 1 || rejected["other"][0] != selector {
		t.Fatalf("groups that could not help the scaled-up pods %v: want other alone, not matching", rejected)
	}
}
