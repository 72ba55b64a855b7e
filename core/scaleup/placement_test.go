package scaleup

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParsePlacement(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Placement
		wantErr bool
	}{
		{"plan", PlacementPlan, false},
		{"scheduler", PlacementScheduler, false},
		{"", "", true},
		{"Scheduler", "", true},
		{"least-allocated", "", true},
	} {
		got, err := ParsePlacement(tc.in)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("ParsePlacement(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func antiAffinity(app string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, TopologyKey: corev1.LabelHostname}}}}
	}
}

func inZone(zone string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: zone} }
}

// placementCase is a cluster of 4 CPU / 16 GiB groups in zones a and b
// with pending pods, and the node counts both ways.
type placementCase struct {
	name      string
	pend      func(c *cluster)
	plan      int
	scheduler int
}

var placementCases = []placementCase{
	{"one pod", func(c *cluster) { c.pend(1, "web", "1", "1Gi", nil) }, 1, 1},
	{"anti-affinity: a node each", func(c *cluster) { c.pend(3, "db", "500m", "1Gi", antiAffinity("db")) }, 3, 3},
	{"equal pods fill equal nodes", func(c *cluster) { c.pend(8, "web", "1", "2Gi", nil) }, 2, 2},
	{"pinned to a zone", func(c *cluster) { c.pend(3, "web", "2", "1Gi", inZone("b")) }, 2, 2},
	{"large pods first", func(c *cluster) {
		c.pend(1, "big", "4", "1Gi", nil)
		c.pend(2, "half", "2", "1Gi", nil)
	}, 2, 2},
	// The plan puts the 4 CPU pod on one node and both halves on the
	// other; the scheduler, placing the halves first, spreads them over
	// both nodes (least allocated) and leaves no room for the large pod.
	{"spreading small pods leaves a large one out", func(c *cluster) {
		c.pend(2, "half", "2", "1Gi", nil)
		c.pend(1, "big", "4", "1Gi", nil)
	}, 2, 3},
}

func (tc placementCase) cluster(t *testing.T) *cluster {
	c := newCluster(t)
	c.group("pool-a", "4", "16Gi", "a", 0, 20)
	c.group("pool-b", "4", "16Gi", "b", 0, 20)
	tc.pend(c)
	return c
}

// TestSchedulerPlacement: the decision reports the plan's node count and
// the scheduler's; where the scheduler's scoring places the pods as the
// plan does, both are equal and --scale-up-placement=scheduler asks for the
// same scale-ups as the plan; where spreading leaves a pod out, the
// scheduler's count is higher and the scale-ups ask for it.
func TestSchedulerPlacement(t *testing.T) {
	for _, tc := range placementCases {
		t.Run(tc.name, func(t *testing.T) {
			plan := tc.cluster(t).decide("least-waste", nil)
			if got := addedNodes(plan); got != tc.plan || plan.PlanNodes != tc.plan {
				t.Fatalf("plan: %d nodes (reported %d), want %d", got, plan.PlanNodes, tc.plan)
			}
			if plan.SchedulerNodes != tc.scheduler {
				t.Fatalf("scheduler-like placement: %d nodes, want %d", plan.SchedulerNodes, tc.scheduler)
			}
			sched := tc.cluster(t).decide("least-waste", func(in *Input) { in.Placement = PlacementScheduler })
			if got := addedNodes(sched); got != tc.scheduler {
				t.Fatalf("with --scale-up-placement=scheduler: %d nodes asked, want %d", got, tc.scheduler)
			}
			if tc.plan == tc.scheduler {
				if a, b := scaleUpShape(plan), scaleUpShape(sched); a != b {
					t.Fatalf("scale-ups differ where scoring does not matter: plan %s, scheduler %s", a, b)
				}
			}
			if helpedPods(sched) != helpedPods(plan) {
				t.Fatalf("scheduler placement helps %d pods, the plan %d", helpedPods(sched), helpedPods(plan))
			}
		})
	}
}

func scaleUpShape(p *Plan) string {
	s := ""
	for _, u := range p.ScaleUps {
		s += fmt.Sprintf("%s:%d->%d/%d ", u.Group, u.From, u.To, len(u.Pods))
	}
	return s
}

// TestRandomMixesSchedulerPlacement: on every seeded mix the
// scheduler-like count is at least the plan's (the plan packs as tightly
// as it can), and the scale-ups of --scale-up-placement=scheduler ask for
// it, for the same pods.
func TestRandomMixesSchedulerPlacement(t *testing.T) {
	var plans, scheds int
	for seed := uint64(1); seed <= mixSeeds; seed++ {
		m := newMix(seed)
		decide := func(p Placement) *Plan {
			c := newCluster(t)
			for _, z := range mixZones {
				c.group("pool-"+z, "4", "16Gi", z, 0, 100)
			}
			c.pending = m.pods
			return c.decide("least-waste", func(in *Input) { in.Placement = p })
		}
		plan, sched := decide(PlacementPlan), decide(PlacementScheduler)
		if plan.SchedulerNodes == 0 || plan.SchedulerNodes < addedNodes(plan) {
			t.Errorf("seed %d: scheduler-like placement %d nodes, the plan %d", seed, plan.SchedulerNodes, addedNodes(plan))
		}
		if addedNodes(sched) != plan.SchedulerNodes || sched.PlanNodes != addedNodes(plan) || helpedPods(sched) != helpedPods(plan) {
			t.Errorf("seed %d: with --scale-up-placement=scheduler %d nodes for %d pods (plan %d), want %d for %d (plan %d)",
				seed, addedNodes(sched), helpedPods(sched), sched.PlanNodes, plan.SchedulerNodes, helpedPods(plan), addedNodes(plan))
		}
		plans += addedNodes(plan)
		scheds += plan.SchedulerNodes
	}
	t.Logf("%d seeds: the plan %d nodes, the scheduler's placement %d", mixSeeds, plans, scheds)
}
