package simulator

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tidal-autoscaler/tidal/simulator/simtest"
)

var (
	indexZones = []string{"zone-a", "zone-b", "zone-c"}
	// indexTaints are what nodes carry: a dedication some pods tolerate,
	// the node lifecycle controller's taints (the unreachable one tolerated
	// by every admitted pod's default tolerations, not-ready's NoSchedule
	// by none), and a preference no Filter reads.
	indexTaints = []corev1.Taint{
		{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule},
		{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
		{Key: "spot", Value: "true", Effect: corev1.TaintEffectPreferNoSchedule},
	}
)

// randomNode is a node as its kubelet registers it: allocatable of a few
// shapes, zone and pool labels, sometimes a taint.
func randomNode(r *rand.Rand, i int) *corev1.Node {
	name := fmt.Sprintf("node-%03d", i)
	n := testNode(name, []string{"2", "4", "8"}[r.IntN(3)], indexZones[r.IntN(3)])
	n.Status.Allocatable[corev1.ResourceMemory] = resource.MustParse([]string{"4Gi", "8Gi", "16Gi"}[r.IntN(3)])
	n.Status.Allocatable[corev1.ResourcePods] = *resource.NewQuantity([]int64{3, 8, 110}[r.IntN(3)], resource.DecimalSI)
	n.Labels["pool"] = []string{"general", "batch"}[r.IntN(2)]
	if r.IntN(3) == 0 {
		n.Spec.Taints = append(n.Spec.Taints, indexTaints[r.IntN(len(indexTaints))])
	}
	return n
}

// randomApp is count replicas of an app with random requests and
// scheduling constraints, each admitted as the API server admits it.
func randomApp(r *rand.Rand, app string, count int) []*corev1.Pod {
	cpu := []string{"100m", "500m", "1", "2", "3"}[r.IntN(5)]
	mem := []string{"128Mi", "1Gi", "3Gi"}[r.IntN(3)]
	var spec corev1.PodSpec
	switch r.IntN(8) {
	case 0:
		spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: indexZones[r.IntN(3)]}
	case 1:
		spec.NodeSelector = map[string]string{"pool": "batch"}
		spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "batch", Effect: corev1.TaintEffectNoSchedule}}
	case 2:
		spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
	case 3:
		spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpNotIn, Values: []string{indexZones[r.IntN(3)]}}}}}}}}
	case 4:
		spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, TopologyKey: corev1.LabelHostname}}}}
	case 5:
		spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}
	}
	out := make([]*corev1.Pod, count)
	for i := range out {
		p := testPod(app, cpu)
		p.Name = app + "-" + simtest.Suffix(r, 5)
		p.UID = types.UID(p.Name)
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse(mem)
		p.Spec.NodeSelector, p.Spec.Affinity, p.Spec.TopologySpreadConstraints = spec.NodeSelector, spec.Affinity, spec.TopologySpreadConstraints
		p.Spec.Tolerations = slices.Clone(spec.Tolerations)
		simtest.Admit(p, r)
		out[i] = p
	}
	return out
}

// randomCluster is a snapshot of up to 150 nodes, added in a random
// order, with running pods filling them to random levels: in some
// clusters most nodes are full, so whole blocks of the index are passed
// over.
func randomCluster(t *testing.T, r *rand.Rand) *Snapshot {
	s := NewSnapshot()
	nodes := make([]*corev1.Node, 1+r.IntN(150))
	for i := range nodes {
		nodes[i] = randomNode(r, i)
	}
	simtest.Shuffle(r, nodes)
	for _, n := range nodes {
		if _, err := s.AddNode(n); err != nil {
			t.Fatal(err)
		}
	}
	fill := 1 + r.IntN(12)
	for i := range fill * len(nodes) {
		p := randomApp(r, fmt.Sprintf("run-%d", i%7), 1)[0]
		p.Spec.NodeSelector, p.Spec.Affinity, p.Spec.TopologySpreadConstraints = nil, nil, nil
		n := nodes[r.IntN(len(nodes))]
		ni := s.NodeInfo(n.Name)
		if len(ni.Pods) >= ni.Allocatable.AllowedPodNumber {
			continue
		}
		p.Spec.NodeName = n.Name
		if err := s.AddPod(info(p), n.Name); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// placeAll places every group in order, with the index or on the whole
// list, and returns where each pod went ("" for none); the snapshot is
// left as it was.
func placeAll(t *testing.T, c *Checker, groups []*PodGroup, indexed bool) map[string]string {
	ctx := context.Background()
	snap := c.Snapshot()
	snap.Fork()
	defer snap.Revert()
	ix := NewNodeIndex(snap.Infos())
	out := map[string]string{}
	for _, g := range groups {
		gc, err := c.CheckGroup(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		var placed []Placed
		var unplaced []*corev1.Pod
		if indexed {
			placed, unplaced, err = c.PlaceGroupIndexed(ctx, gc, g.Pods, ix)
		} else {
			placed, unplaced, err = c.PlaceGroup(ctx, gc, g.Pods, snap.Infos())
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range placed {
			out[p.Info.GetPod().Name] = p.Node
		}
		for _, p := range unplaced {
			out[p.Name] = ""
		}
	}
	return out
}

// TestIndexedPlacementIsTheWholeListsPlacement is the index's property:
// on random clusters (nodes in random order, with taints the lifecycle
// controller sets) and random pending pods as the API server admits them
// (default tolerations with tolerationSeconds, random token volumes) in
// random lister order, every pod goes where the search over every node
// puts it.
func TestIndexedPlacementIsTheWholeListsPlacement(t *testing.T) {
	placedSome, leftSome := 0, 0
	for seed := range uint64(100) {
		r := rand.New(rand.NewPCG(seed, 29))
		snap := randomCluster(t, r)
		c, err := NewChecker(context.Background(), snap, nil)
		if err != nil {
			t.Fatal(err)
		}
		var pending []*corev1.Pod
		for a := range 1 + r.IntN(8) {
			pending = append(pending, randomApp(r, fmt.Sprintf("pend-%d", a), 1+r.IntN(40))...)
		}
		simtest.Shuffle(r, pending)
		groups := NewEquivalenceKeys().Group(pending)
		whole, indexed := placeAll(t, c, groups, false), placeAll(t, c, groups, true)
		for _, p := range pending {
			if whole[p.Name] != indexed[p.Name] {
				t.Errorf("seed %d: pod %s (tolerations %v, selector %v) placed on %q with the index, %q on the whole list",
					seed, p.Name, p.Spec.Tolerations, p.Spec.NodeSelector, indexed[p.Name], whole[p.Name])
			}
			if whole[p.Name] == "" {
				leftSome++
			} else {
				placedSome++
			}
		}
	}
	// The property means something only if both outcomes occur.
	if placedSome == 0 || leftSome == 0 {
		t.Fatalf("%d pods placed, %d left: the random clusters do not exercise the search", placedSome, leftSome)
	}
	t.Logf("%d pods placed, %d left, the same with the index", placedSome, leftSome)
}

// TestIndexListsTheNodesAKindOfPodIsAdmittedTo: which nodes a group looks
// at, by its tolerations (the admitted default ones included), node
// selector and required node affinity, in the order of the list.
func TestIndexListsTheNodesAKindOfPodIsAdmittedTo(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 1))
	node := func(name, zone string, taints ...corev1.Taint) fwk.NodeInfo {
		n := testNode(name, "4", zone)
		n.Spec.Taints = taints
		ni := framework.NewNodeInfo()
		ni.SetNode(n)
		return ni
	}
	nodes := []fwk.NodeInfo{
		node("plain-b", "zone-b"),
		node("dedicated", "zone-a", indexTaints[0]),
		node("unreachable", "zone-a", indexTaints[2]),
		node("not-ready", "zone-a", indexTaints[3]),
		node("spot", "zone-c", indexTaints[4]),
		node("plain-a", "zone-a"),
	}
	pod := func(edit func(*corev1.Pod)) *corev1.Pod {
		p := testPod("web", "1")
		edit(p)
		simtest.Admit(p, r)
		return p
	}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want []string
	}{
		{"admitted, no constraint: the unreachable taint is tolerated by default, PreferNoSchedule filters nothing",
			pod(func(*corev1.Pod) {}), []string{"plain-b", "unreachable", "spot", "plain-a"}},
		{"tolerating dedicated", pod(func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		}), []string{"plain-b", "dedicated", "unreachable", "spot", "plain-a"}},
		{"zone selector", pod(func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: "zone-a"} }),
			[]string{"unreachable", "plain-a"}},
		{"required affinity, not in zone-a", pod(func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"zone-a"}}}}}}}}
		}), []string{"plain-b", "spot"}},
	}
	ix := NewNodeIndex(nodes)
	for _, tc := range cases {
		var got []string
		for _, ni := range ix.kind(tc.pod).nodes {
			got = append(got, ni.Node().Name)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: looks at %v, want %v", tc.name, got, tc.want)
		}
	}
	if len(ix.kinds) != len(cases) {
		t.Errorf("%d kinds listed for %d kinds of pod", len(ix.kinds), len(cases))
	}
}

// TestBlockRoom: a block is passed over only when even its roomiest node
// lacks what the pre-check asks for.
func TestBlockRoom(t *testing.T) {
	gi := int64(1 << 30)
	cases := []struct {
		name string
		room room
		req  framework.Resource
		want bool
	}{
		{"exactly enough", room{1000, gi, 1}, framework.Resource{MilliCPU: 1000, Memory: gi}, true},
		{"a millicore short", room{999, gi, 1}, framework.Resource{MilliCPU: 1000, Memory: gi}, false},
		{"a byte short", room{1000, gi - 1, 1}, framework.Resource{MilliCPU: 1000, Memory: gi}, false},
		{"no pod slot", room{1000, gi, 0}, framework.Resource{MilliCPU: 1, Memory: 1}, false},
		{"nothing requested, no cpu left", room{0, 0, 1}, framework.Resource{}, true},
		{"over-committed node, nothing requested", room{-500, -1, 1}, framework.Resource{}, true},
	}
	for _, tc := range cases {
		if got := tc.room.admits(&tc.req); got != tc.want {
			t.Errorf("%s: admits %v, want %v", tc.name, got, tc.want)
		}
	}
}
