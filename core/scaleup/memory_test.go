package scaleup

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tidal-autoscaler/tidal/expander"
	"github.com/tidal-autoscaler/tidal/simulator"
	"github.com/tidal-autoscaler/tidal/simulator/simtest"
)

// awaiting is a cluster whose pending pods all fit on a node already
// requested: the decision asks for nothing.
func awaiting(t *testing.T) (*cluster, func() Input) {
	c := newCluster(t)
	c.node("n1", "4", "16Gi", "a", "3")
	c.group("g", "4", "16Gi", "a", 2, 10).Upcoming = 1
	c.group("big", "16", "64Gi", "a", 0, 10)
	r := rand.New(rand.NewPCG(3, 3))
	c.pend(3, "web", "1", "1Gi", func(p *corev1.Pod) { simtest.Admit(p, r) })
	c.pend(1, "huge", "64", "1Gi", nil)
	keys := simulator.NewEquivalenceKeys()
	chain, _ := expander.ParseChain("least-waste")
	return c, func() Input {
		return Input{Checker: c.checker, Pending: keys.Group(c.pending), Groups: append([]Group(nil), c.groups...), Chain: chain,
			ExpanderContext: &expander.Context{Seed: 1}}
	}
}

func TestMemoryReusesADecisionThatAskedForNothing(t *testing.T) {
	c, input := awaiting(t)
	var m Memory
	first, reused, err := m.Decide(context.Background(), input())
	if err != nil || reused {
		t.Fatalf("first decision: reused %v, err %v", reused, err)
	}
	if len(first.ScaleUps) != 0 || first.FitExisting != 3 || len(first.Awaiting) != 2 || len(first.NoScaleUp) != 1 {
		t.Fatalf("scale-ups %v, %d fit, %d awaiting, %d refused: want a web pod on n1, 2 on the upcoming node, the huge pod refused",
			first.ScaleUps, first.FitExisting, len(first.Awaiting), len(first.NoScaleUp))
	}
	// The pod on n1 is the one scale-down must picture there; those on
	// the upcoming node's copy are not.
	if len(first.OnExisting) != 1 || first.OnExisting[0].Node != "n1" || first.Awaiting[first.OnExisting[0].Info.GetPod().UID] != "" {
		t.Fatalf("on existing nodes %+v: want the one web pod that fits n1", first.OnExisting)
	}
	in := input()
	again, reused, err := m.Decide(context.Background(), in)
	if err != nil || !reused {
		t.Fatalf("nothing changed: reused %v, err %v", reused, err)
	}
	if again.NoScaleUp[0].Group != in.Pending[1] || again.FitExisting != first.FitExisting {
		t.Fatal("the reused decision does not name this iteration's pod groups")
	}
	c.snap.Fork()
	defer c.snap.Revert()
	if err := c.snap.RemoveNode("n1"); err != nil {
		t.Fatal(err)
	}
	c.snap.Commit()
	if _, reused, _ := m.Decide(context.Background(), input()); reused {
		t.Fatal("reused after the snapshot changed")
	}
}

func TestMemoryDecidesAgainWhenAnythingItReadChanged(t *testing.T) {
	cases := []struct {
		name string
		edit func(*cluster, *Input)
	}{
		{"a group's target", func(c *cluster, in *Input) { in.Groups[0].Target++ }},
		{"upcoming nodes", func(c *cluster, in *Input) { in.Groups[0].Upcoming = 0 }},
		{"a group backed off", func(c *cluster, in *Input) { in.Groups[1].Unavailable = "backoff" }},
		{"a group's maximum", func(c *cluster, in *Input) { in.Groups[1].Max = 2 }},
		{"the template", func(c *cluster, in *Input) {
			node := in.Groups[1].Template.Node.DeepCopy()
			node.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("128")
			tmpl, err := simulator.NewNodeTemplate("big", node, nil)
			if err != nil {
				panic(err)
			}
			in.Groups[1].Template = tmpl
		}},
		{"a limit", func(c *cluster, in *Input) { in.Limits.MaxNodesTotal = 3 }},
		{"a node not ready", func(c *cluster, in *Input) { in.NotReady = map[string]bool{"g-1": true} }},
		{"a cleared nomination", func(c *cluster, in *Input) {
			in.Cleared = map[types.UID]string{in.Pending[0].Pods[0].UID: "g-1"}
		}},
		{"a pod waiting for a group", func(c *cluster, in *Input) {
			in.Waiting = map[types.UID]string{in.Pending[0].Pods[0].UID: "g"}
		}},
		{"rounds", func(c *cluster, in *Input) { in.MaxRounds = 1 }},
		{"balancing", func(c *cluster, in *Input) { in.BalanceSimilar = true }},
		{"balancing labels", func(c *cluster, in *Input) { in.BalancingLabels = []string{"pool"} }},
		{"a group's binpacking budget", func(c *cluster, in *Input) { in.MaxGroupBinpacking = time.Second }},
		{"a pending pod more", func(c *cluster, in *Input) {
			in.Pending = append(in.Pending, &simulator.PodGroup{Key: "other", Pods: []*corev1.Pod{c.pod("db", "1", "1Gi")}})
		}},
		{"a group's pods in another order", func(c *cluster, in *Input) {
			g := *in.Pending[0]
			g.Pods = append([]*corev1.Pod(nil), g.Pods...)
			g.Pods[0], g.Pods[1] = g.Pods[1], g.Pods[0]
			in.Pending[0] = &g
		}},
		{"a pod in the next group", func(c *cluster, in *Input) {
			a, b := *in.Pending[0], *in.Pending[1]
			n := len(a.Pods) - 1
			b.Pods = append([]*corev1.Pod{a.Pods[n]}, b.Pods...)
			a.Pods = a.Pods[:n:n]
			in.Pending[0], in.Pending[1] = &a, &b
		}},
		{"another pod in a group", func(c *cluster, in *Input) {
			g := *in.Pending[0]
			g.Pods = append(append([]*corev1.Pod(nil), g.Pods[1:]...), c.pod("web", "1", "1Gi"))
			in.Pending[0] = &g
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, input := awaiting(t)
			var m Memory
			if _, _, err := m.Decide(context.Background(), input()); err != nil {
				t.Fatal(err)
			}
			in := input()
			tc.edit(c, &in)
			if _, reused, err := m.Decide(context.Background(), in); err != nil || reused {
				t.Fatalf("reused %v, err %v", reused, err)
			}
		})
	}
}

// A decision that offered the expander no choice does not depend on the
// seed: another seed reuses it.
func TestMemoryReusesWhateverTheSeed(t *testing.T) {
	_, input := awaiting(t)
	var m Memory
	if _, _, err := m.Decide(context.Background(), input()); err != nil {
		t.Fatal(err)
	}
	in := input()
	in.ExpanderContext = &expander.Context{Seed: 99}
	if _, reused, err := m.Decide(context.Background(), in); err != nil || !reused {
		t.Fatalf("another seed: reused %v, err %v; want the decision reused", reused, err)
	}
}

func TestMemoryNeverReusesAScaleUp(t *testing.T) {
	c := newCluster(t)
	c.group("g", "4", "16Gi", "a", 0, 10)
	c.pend(2, "web", "1", "1Gi", nil)
	chain, _ := expander.ParseChain("least-waste")
	in := Input{Checker: c.checker, Pending: simulator.NewEquivalenceKeys().Group(c.pending), Groups: c.groups, Chain: chain,
		ExpanderContext: &expander.Context{Seed: 1}}
	var m Memory
	for i := 0; i < 2; i++ {
		plan, reused, err := m.Decide(context.Background(), in)
		if err != nil || reused || len(plan.ScaleUps) != 1 {
			t.Fatalf("decision %d: %d scale-ups, reused %v, err %v", i, len(plan.ScaleUps), reused, err)
		}
	}
}
