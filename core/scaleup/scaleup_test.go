package scaleup

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tidal-autoscaler/tidal/expander"
	"github.com/tidal-autoscaler/tidal/simulator"
	"github.com/tidal-autoscaler/tidal/simulator/checkertest"
)

// cluster is a small hand-built cluster for decision tests.
type cluster struct {
	t       testing.TB
	snap    *simulator.Snapshot
	checker *simulator.Checker
	groups  []Group
	pending []*corev1.Pod
	serial  int
}

func newCluster(t testing.TB) *cluster {
	t.Helper()
	// These clusters have no volumes: the plugins need no listers.
	snap, checker := checkertest.New(t, nil)
	return &cluster{t: t, snap: snap, checker: checker}
}

func nodeObj(name, cpu, mem, zone string, taints ...corev1.Taint) *corev1.Node {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
		corev1.ResourcePods: resource.MustParse("110")}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), Labels: map[string]string{
			corev1.LabelHostname: name, corev1.LabelTopologyZone: zone}},
		Spec:   corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res},
	}
}

// group adds a node group whose template has the given shape.
func (c *cluster) group(id, cpu, mem, zone string, target, max int, taints ...corev1.Taint) *Group {
	tmpl, err := simulator.NewNodeTemplate(id, nodeObj("template-node-for-"+id, cpu, mem, zone, taints...), nil)
	if err != nil {
		c.t.Fatal(err)
	}
	c.groups = append(c.groups, Group{ID: id, Template: tmpl, Max: max, Target: target})
	return &c.groups[len(c.groups)-1]
}

// node adds an existing node running pods of the given cpu each.
func (c *cluster) node(name, cpu, mem, zone string, running ...string) {
	if _, err := c.snap.AddNode(nodeObj(name, cpu, mem, zone)); err != nil {
		c.t.Fatal(err)
	}
	for _, r := range running {
		p := c.pod("running", r, "1Gi")
		p.Spec.NodeName = name
		pi, _ := framework.NewPodInfo(p)
		if err := c.snap.AddPod(pi, name); err != nil {
			c.t.Fatal(err)
		}
	}
}

func (c *cluster) pod(app, cpu, mem string) *corev1.Pod {
	c.serial++
	name := fmt.Sprintf("%s-%d", app, c.serial)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name), Labels: map[string]string{"app": app},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app, UID: types.UID("rs-" + app), Controller: ptrTrue()}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
		}}}},
	}
}

func ptrTrue() *bool { b := true; return &b }

// pend adds n pending pods of an app, shaped by mutate.
func (c *cluster) pend(n int, app, cpu, mem string, mutate func(*corev1.Pod)) {
	for i := 0; i < n; i++ {
		p := c.pod(app, cpu, mem)
		if mutate != nil {
			mutate(p)
		}
		c.pending = append(c.pending, p)
	}
}

func (c *cluster) decide(expanderName string, edit func(*Input)) *Plan {
	c.t.Helper()
	return c.decideIn(context.Background(), expanderName, edit)
}

// decideIn is decide within ctx (its deadline bounds the decision).
func (c *cluster) decideIn(ctx context.Context, expanderName string, edit func(*Input)) *Plan {
	c.t.Helper()
	chain, err := expander.ParseChain(expanderName)
	if err != nil {
		c.t.Fatal(err)
	}
	in := Input{Checker: c.checker, Pending: simulator.NewEquivalenceKeys().Group(c.pending), Groups: c.groups,
		Chain: chain, ExpanderContext: &expander.Context{Seed: 7}}
	if edit != nil {
		edit(&in)
	}
	before := c.snap.Len()
	plan, err := Decide(ctx, in)
	if err != nil {
		c.t.Fatal(err)
	}
	if c.snap.Len() != before || c.snap.Forked() {
		c.t.Fatalf("Decide left the snapshot changed: %d nodes, was %d (forked %v)", c.snap.Len(), before, c.snap.Forked())
	}
	return plan
}

// nodesAdded sums the scale-ups per group.
func nodesAdded(p *Plan) map[string]int {
	out := map[string]int{}
	for _, u := range p.ScaleUps {
		out[u.Group] += u.To - u.From
	}
	return out
}

func helpedPods(p *Plan) int {
	n := 0
	for _, u := range p.ScaleUps {
		n += len(u.Pods)
	}
	return n
}

func TestPodsThatFitExistingNodesTriggerNothing(t *testing.T) {
	c := newCluster(t)
	c.node("n1", "4", "16Gi", "a", "1")
	c.group("g", "4", "16Gi", "a", 1, 10)
	c.pend(3, "web", "1", "1Gi", nil)
	plan := c.decide("least-waste", nil)
	if len(plan.ScaleUps) != 0 || plan.FitExisting != 3 {
		t.Fatalf("plan %+v: want the 3 pods to fit the free 3 CPU", plan)
	}
	if len(plan.Awaiting) != 0 {
		t.Fatalf("pods placed on a Ready node await nothing, got %v", plan.Awaiting)
	}
}

func TestUpcomingNodesCountAsTemplateCopies(t *testing.T) {
	c := newCluster(t)
	c.group("g", "4", "16Gi", "a", 2, 10).Upcoming = 2
	c.pend(8, "web", "1", "1Gi", nil)
	plan := c.decide("least-waste", nil)
	if len(plan.ScaleUps) != 0 || plan.FitExisting != 8 {
		t.Fatalf("8 pods fit the 2 upcoming 4-CPU nodes, but plan = %+v", plan)
	}
	if helped := plan.Helped(); len(helped) != 8 || slices.ContainsFunc(slices.Collect(maps.Values(helped)), func(g string) bool { return g != "g" }) {
		t.Fatalf("the 8 pods await group g's upcoming nodes, got %v", helped)
	}
	c.pend(2, "web", "1", "1Gi", nil)
	plan = c.decide("least-waste", nil)
	if got := nodesAdded(plan); got["g"] != 1 || plan.ScaleUps[0].From != 2 || plan.ScaleUps[0].To != 3 {
		t.Fatalf("10 pods: want one more node 2->3, got %+v", plan.ScaleUps)
	}
}

// A registered node that is not ready yet (here a startup taint that only
// prefers no scheduling) is counted once: as its group's upcoming copy,
// never also as free room of its own.
func TestNotReadyNodesTakeNoPendingPods(t *testing.T) {
	c := newCluster(t)
	c.group("g", "4", "16Gi", "a", 1, 10).Upcoming = 1
	c.node("g-1", "4", "16Gi", "a")
	c.pend(8, "web", "1", "1Gi", nil)
	plan := c.decide("least-waste", func(in *Input) { in.NotReady = map[string]bool{"g-1": true} })
	if got := nodesAdded(plan); got["g"] != 1 || plan.FitExisting != 4 || helpedPods(plan) != 4 {
		t.Fatalf("8 pods, 1 node coming: want 4 awaiting it and 1 more node for 4, got %v, %d fit, %d helped", got, plan.FitExisting, helpedPods(plan))
	}
	for uid := range plan.Awaiting {
		if plan.Awaiting[uid] != "g" {
			t.Fatalf("pod %s awaits %q", uid, plan.Awaiting[uid])
		}
	}
	if len(plan.Awaiting) != 4 {
		t.Fatalf("%d pods await the upcoming node, want 4", len(plan.Awaiting))
	}
}

func TestBinpackingSizesByTheScheduler(t *testing.T) {
	c := newCluster(t)
	c.group("g", "4", "16Gi", "a", 0, 100)
	// 1.5 CPU pods: two per 4-CPU node, so 10 pods need 5 nodes (summed
	// requests would say 4).
	c.pend(10, "web", "1500m", "1Gi", nil)
	plan := c.decide("least-waste", nil)
	if got := nodesAdded(plan); got["g"] != 5 || helpedPods(plan) != 10 {
		t.Fatalf("want 5 nodes for 10 pods, got %v helping %d", got, helpedPods(plan))
	}
}

func TestZoneSelectorGrowsOnlyTheMatchingGroup(t *testing.T) {
	c := newCluster(t)
	c.group("in-a", "4", "16Gi", "zone-a", 0, 10)
	c.group("in-b", "4", "16Gi", "zone-b", 0, 10)
	c.pend(4, "web", "1", "1Gi", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: "zone-b"} })
	plan := c.decide("random", nil)
	if got := nodesAdded(plan); len(got) != 1 || got["in-b"] != 1 {
		t.Fatalf("zone-b pods grew %v, want only in-b by 1", got)
	}
}

func TestTaintedPoolOnlyForToleratingPods(t *testing.T) {
	taint := corev1.Taint{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}
	c := newCluster(t)
	c.group("batch", "4", "16Gi", "a", 0, 10, taint)
	c.pend(2, "web", "1", "1Gi", nil)
	plan := c.decide("random", nil)
	if len(plan.ScaleUps) != 0 || len(plan.NoScaleUp) != 1 {
		t.Fatalf("intolerant pods scaled the tainted pool: %+v", plan.ScaleUps)
	}
	if r := plan.NoScaleUp[0].Reasons; r["node(s) had untolerated taint(s)"] != 1 {
		t.Fatalf("reasons %v: want the untolerated taint", r)
	}
	c.pending = nil
	c.pend(2, "jobs", "1", "1Gi", func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "batch", Effect: corev1.TaintEffectNoSchedule}}
	})
	if got := nodesAdded(c.decide("random", nil)); got["batch"] != 1 {
		t.Fatalf("tolerating pods grew %v, want batch by 1", got)
	}
}

func TestHostnameAntiAffinityGetsEveryNodeInOneDecision(t *testing.T) {
	c := newCluster(t)
	c.group("g", "16", "64Gi", "a", 0, 100)
	c.pend(12, "db", "500m", "1Gi", func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, TopologyKey: corev1.LabelHostname,
			}}}}
	})
	plan := c.decide("least-waste", nil)
	if got := nodesAdded(plan); got["g"] != 12 || helpedPods(plan) != 12 {
		t.Fatalf("12 anti-affine pods: got %v helping %d, want 12 nodes at once (no scale-up: %+v)", got, helpedPods(plan), plan.NoScaleUp)
	}
}

func TestZoneSpreadUsesEveryZoneInOneDecision(t *testing.T) {
	c := newCluster(t)
	for _, z := range []string{"zone-a", "zone-b", "zone-c"} {
		c.node("existing-"+z, "4", "16Gi", z)
		c.group("pool-"+z, "4", "16Gi", z, 1, 10)
	}
	c.pend(9, "web", "3", "1Gi", func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		}}
	})
	plan := c.decide("least-waste", nil)
	got := nodesAdded(plan)
	// 3-CPU pods: one per 4-CPU node. The 3 existing nodes take 3; the
	// other 6 need 2 new nodes in every zone.
	if got["pool-zone-a"] != 2 || got["pool-zone-b"] != 2 || got["pool-zone-c"] != 2 || plan.FitExisting != 3 {
		t.Fatalf("zone spread: got %v (fit existing %d), want 2 new nodes per zone", got, plan.FitExisting)
	}
}

func TestMaxSizeReachedIsExplained(t *testing.T) {
	c := newCluster(t)
	c.group("small", "4", "16Gi", "a", 3, 3)
	c.group("other-zone", "4", "16Gi", "b", 0, 3)
	c.pend(2, "web", "1", "1Gi", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: "a"} })
	plan := c.decide("random", nil)
	if len(plan.ScaleUps) != 0 || len(plan.NoScaleUp) != 1 {
		t.Fatalf("plan %+v: want no scale-up", plan.ScaleUps)
	}
	r := plan.NoScaleUp[0].Reasons
	if r[ReasonMaxSize] != 1 || r["node(s) didn't match Pod's node affinity/selector"] != 1 {
		t.Fatalf("reasons %v: want 1 max size and 1 selector mismatch", r)
	}
}

func TestUnavailableGroupIsSkipped(t *testing.T) {
	c := newCluster(t)
	c.group("spot", "4", "16Gi", "a", 0, 10).Unavailable = "in backoff after failed scale-up"
	c.group("ondemand", "4", "16Gi", "a", 0, 10)
	c.pend(2, "web", "1", "1Gi", nil)
	p, _ := expander.ParsePriorities("10:\n  - spot\n1:\n  - ondemand\n")
	plan := c.decide("priority", func(in *Input) { in.ExpanderContext.Priorities = p })
	if got := nodesAdded(plan); got["ondemand"] != 1 || got["spot"] != 0 {
		t.Fatalf("backed-off spot group: got %v, want ondemand", got)
	}
}

func TestClusterLimits(t *testing.T) {
	c := newCluster(t)
	c.group("g", "4", "16Gi", "a", 0, 100)
	c.pend(20, "web", "4", "1Gi", nil)
	plan := c.decide("random", func(in *Input) { in.Limits = Limits{MaxNodesTotal: 5, Nodes: 2} })
	if got := nodesAdded(plan); got["g"] != 3 {
		t.Fatalf("max-nodes-total 5 with 2 nodes: got %v, want 3", got)
	}
	if r := plan.NoScaleUp[0].Reasons; r[ReasonMaxNodesTotal] != 1 {
		t.Fatalf("reasons %v", r)
	}
	plan = c.decide("random", func(in *Input) { in.Limits = Limits{MaxMilliCores: 10000, MilliCores: 2000} })
	if got := nodesAdded(plan); got["g"] != 2 {
		t.Fatalf("cores-total 10 with 2 used: got %v, want 2 nodes of 4 CPU", got)
	}
	plan = c.decide("random", func(in *Input) { in.Limits = Limits{MaxNodesPerScaleUp: 4} })
	if got := nodesAdded(plan); got["g"] != 4 {
		t.Fatalf("max-nodes-per-scaleup 4: got %v", got)
	}
}

func TestBalanceSimilarGroups(t *testing.T) {
	c := newCluster(t)
	c.group("pool-a", "4", "16Gi", "zone-a", 2, 10)
	c.group("pool-b", "4", "16Gi", "zone-b", 0, 10)
	c.group("pool-c", "4", "16Gi", "zone-c", 0, 10)
	c.group("big", "16", "64Gi", "zone-a", 0, 10)
	c.pend(8, "web", "4", "1Gi", nil)
	plan := c.decide("least-waste", func(in *Input) { in.BalanceSimilar = true })
	got := nodesAdded(plan)
	// 8 nodes over sizes 2, 0, 0: b and c first, then evenly: 3, 3, 4 → +1, +3, +4.
	if got["pool-a"]+got["pool-b"]+got["pool-c"] != 8 || got["pool-a"] != 1 || got["pool-b"] != 3 || got["pool-c"] != 4 && got["pool-b"] != 4 {
		t.Fatalf("balanced: got %v, want sizes evened to 3/3/4 (a+1, b and c +3/+4)", got)
	}
	if !plan.ScaleUps[0].Balanced {
		t.Fatal("scale-up not marked balanced")
	}
}

func TestMostPodsWorkedExample(t *testing.T) {
	c := newCluster(t)
	// One pool can take 10 of the pods (max 5 nodes of 2), the other 20.
	c.group("ten", "4", "16Gi", "a", 0, 5)
	c.group("twenty", "4", "16Gi", "a", 0, 10)
	c.pend(20, "web", "2", "1Gi", nil)
	plan := c.decide("most-pods", func(in *Input) { in.MaxRounds = 1 })
	if len(plan.ScaleUps) != 1 || plan.ScaleUps[0].Group != "twenty" || len(plan.ScaleUps[0].Pods) != 20 {
		t.Fatalf("most-pods chose %+v, want twenty for 20 pods", plan.ScaleUps)
	}
}

// expiring is a context whose deadline passes after its Err was asked
// left times: a decision's clock that moves at every reading.
type expiring struct {
	context.Context
	left int
}

func (e *expiring) Err() error {
	if e.left <= 0 {
		return context.DeadlineExceeded
	}
	e.left--
	return nil
}

func TestOutOfTimeTheDecisionStillScalesUpForWhatItDecided(t *testing.T) {
	c := newCluster(t)
	c.group("g", "4", "16Gi", "a", 0, 100)
	for _, app := range []string{"web", "api", "db"} {
		c.pend(3, app, "1", "1Gi", nil)
	}
	ctx, cancel := context.WithDeadline(context.Background(), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	defer cancel()
	plan := c.decideIn(ctx, "random", nil)
	if len(plan.ScaleUps) != 1 || len(plan.ScaleUps[0].Pods) != 3 || plan.ScaleUps[0].Pods[0].Labels["app"] != "web" {
		t.Fatalf("out of time from the start: scale-ups %+v; want one, for the 3 web pods the filter reached", plan.ScaleUps)
	}
	if plan.Skipped != 6 || len(plan.Unfinished) != 2 || len(plan.NoScaleUp) != 0 {
		t.Fatalf("skipped %d in %d groups, %d without scale-up; want the 6 api and db pods left for the next decision",
			plan.Skipped, len(plan.Unfinished), len(plan.NoScaleUp))
	}
}

func TestPodsTheEstimatesDidNotReachAreLeftForTheNextDecision(t *testing.T) {
	c := newCluster(t)
	c.group("g", "4", "16Gi", "a", 0, 100)
	// 12 pods of 2 CPU need 6 nodes, each new one a look at the deadline:
	// it passes while packing.
	c.pend(12, "web", "2", "1Gi", nil)
	plan := c.decideIn(&expiring{Context: context.Background(), left: 3}, "random", nil)
	helped := 0
	for _, u := range plan.ScaleUps {
		helped += len(u.Pods)
	}
	if helped == 0 || helped == 12 || helped+plan.Skipped != 12 || len(plan.NoScaleUp) != 0 {
		t.Fatalf("%d pods helped, %d skipped, %d groups without scale-up: want some helped, the rest skipped, none refused",
			helped, plan.Skipped, len(plan.NoScaleUp))
	}
}

// The first round's checks come from the filter, caught up with the pods it
// placed later: a pod placed by the filter after a group was checked, and
// refusing that group's zone, keeps the group out of that zone.
func TestFirstRoundSeesPodsTheFilterPlacedLater(t *testing.T) {
	c := newCluster(t)
	c.node("n1", "2", "16Gi", "zone-a")
	c.group("pool-a", "4", "16Gi", "zone-a", 0, 10)
	c.group("pool-b", "4", "16Gi", "zone-b", 0, 10)
	c.pend(1, "batch", "3", "1Gi", nil)
	c.pend(1, "guard", "1", "1Gi", func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "batch"}}, TopologyKey: corev1.LabelTopologyZone}}}}
	})
	p, _ := expander.ParsePriorities("10:\n  - pool-a\n1:\n  - pool-b\n")
	plan := c.decide("priority", func(in *Input) { in.ExpanderContext.Priorities = p })
	if plan.FitExisting != 1 || fmt.Sprint(nodesAdded(plan)) != "map[pool-b:1]" {
		t.Fatalf("%d fit n1, scale-ups %v: want the guard on n1 (zone-a) and the batch pod in zone-b", plan.FitExisting, nodesAdded(plan))
	}
}

func TestReasonsFormat(t *testing.T) {
	r := newReasons()
	g := &simulator.PodGroup{}
	r.set(g, "a", ReasonMaxSize)
	r.set(g, "b", ReasonMaxSize)
	r.set(g, "c", "Insufficient cpu")
	got := r.of(g)
	if got[ReasonMaxSize] != 2 || got["Insufficient cpu"] != 1 || !strings.Contains(ReasonMaxSize, "max node group size") {
		t.Fatalf("reasons %v", got)
	}
}

func TestSameLabels(t *testing.T) {
	node := func(labels map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
	}
	a := node(map[string]string{"pool": "web", "arch": "amd64", "zone": "a"})
	tests := []struct {
		name   string
		b      *corev1.Node
		labels []string
		want   bool
	}{
		{"equal values, other labels differ", node(map[string]string{"pool": "web", "arch": "arm64"}), []string{"pool"}, true},
		{"one of two differs", node(map[string]string{"pool": "web", "arch": "arm64"}), []string{"pool", "arch"}, false},
		{"missing on one", node(map[string]string{"arch": "amd64"}), []string{"pool"}, false},
		{"missing on both", node(nil), []string{"gpu"}, false},
	}
	for _, tc := range tests {
		if got := SameLabels(a, tc.b, tc.labels); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// --balancing-label replaces the built-in comparison: groups of different
// sizes are balanced when their templates share the label's value, and
// groups alike in everything else are not when they do not.
func TestBalancingLabelDecidesAlone(t *testing.T) {
	c := newCluster(t)
	// other is alike pool-a and pool-b but for its label; big differs in
	// size but shares the label.
	for _, g := range []struct{ id, cpu, mem, pool string }{
		{"pool-a", "4", "16Gi", "web"}, {"pool-b", "4", "16Gi", "web"}, {"other", "4", "16Gi", "batch"}, {"big", "8", "32Gi", "web"},
	} {
		c.group(g.id, g.cpu, g.mem, "zone-"+g.id, 0, 10).Template.Node.Labels["pool"] = g.pool
	}
	c.pend(6, "web", "4", "1Gi", nil)
	plan := c.decide("priority", func(in *Input) {
		in.BalanceSimilar, in.BalancingLabels = true, []string{"pool"}
		in.ExpanderContext.Priorities, _ = expander.ParsePriorities("10:\n  - ^pool-a$\n")
	})
	got := nodesAdded(plan)
	if got["other"] != 0 || got["big"] == 0 || got["pool-b"] == 0 || !plan.ScaleUps[0].Balanced {
		t.Fatalf("scale-ups %v: want pool-a balanced with pool-b and big (pool=web), never other", got)
	}
}

// --max-nodegroup-binpacking-duration bounds each group's estimate within
// the decision's deadline: a longer group budget does not extend it.
func TestTheDecisionDeadlineBindsWithinAGroupBudget(t *testing.T) {
	c := newCluster(t)
	c.group("g", "4", "16Gi", "a", 0, 100)
	c.pend(12, "web", "2", "1Gi", nil)
	ctx, cancel := context.WithDeadline(context.Background(), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	defer cancel()
	plan := c.decideIn(ctx, "random", func(in *Input) { in.MaxGroupBinpacking = time.Hour })
	if len(plan.ScaleUps) != 1 || plan.ScaleUps[0].To-plan.ScaleUps[0].From != 1 || plan.Skipped != 10 {
		t.Fatalf("out of time with an hour's group budget: scale-ups %+v, %d skipped; want one node for 2 pods, 10 skipped",
			plan.ScaleUps, plan.Skipped)
	}
}
