package simulator

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"
)

func testNode(name, cpu, zone string) *corev1.Node {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods: resource.MustParse("110")}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelTopologyZone: zone}},
		Status:     corev1.NodeStatus{Capacity: res, Allocatable: res},
	}
}

var podSerial int

func testPod(app, cpu string) *corev1.Pod {
	podSerial++
	name := fmt.Sprintf("%s-%d", app, podSerial)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name), Labels: map[string]string{"app": app},
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: app, UID: types.UID("rs-" + app), Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")},
		}}}},
	}
}

func info(p *corev1.Pod) *framework.PodInfo {
	pi, err := framework.NewPodInfo(p)
	if err != nil {
		panic(err)
	}
	return pi
}

func layout(s *Snapshot) []string {
	var out []string
	for _, ni := range s.Infos() {
		out = append(out, fmt.Sprintf("%s:%d:%d", ni.Node().Name, len(ni.GetPods()), ni.GetRequested().GetMilliCPU()))
	}
	return out
}

func TestSnapshotForkRevertRestoresExactly(t *testing.T) {
	s := NewSnapshot()
	for _, n := range []string{"a", "b", "c"} {
		if _, err := s.AddNode(testNode(n, "4", "z")); err != nil {
			t.Fatal(err)
		}
	}
	p := testPod("web", "1")
	if err := s.AddPod(info(p), "b"); err != nil {
		t.Fatal(err)
	}
	before := fmt.Sprint(layout(s))

	s.Fork()
	_ = s.AddPod(info(testPod("x", "2")), "a")
	_, _ = s.AddNode(testNode("d", "8", "z"))
	_ = s.AddPod(info(testPod("y", "1")), "d")
	_ = s.RemovePod(p, "b")
	_ = s.RemoveNode("a")
	s.Fork()
	_ = s.RemoveNode("c")
	s.Commit() // inner changes join the outer fork
	if s.Len() != 2 || s.NodeInfo("a") != nil || s.NodeInfo("c") != nil {
		t.Fatalf("inside the fork: %v", layout(s))
	}
	s.Revert()
	if got := fmt.Sprint(layout(s)); got != before || s.Forked() {
		t.Fatalf("after revert %s, want %s", got, before)
	}
	if err := s.RemovePod(p, "b"); err != nil {
		t.Fatalf("the original pod is no longer on b: %v", err)
	}
}

// TestSnapshotRevertKeepsPodOrder checks that a revert leaves every pod
// list of a node (all pods, those with affinity, those with required
// anti-affinity) in its order before the fork, whatever was added and
// removed in between.
func TestSnapshotRevertKeepsPodOrder(t *testing.T) {
	s := NewSnapshot()
	if _, err := s.AddNode(testNode("a", "64", "z")); err != nil {
		t.Fatal(err)
	}
	anti := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, TopologyKey: corev1.LabelHostname}}}}
		return p
	}
	var bound []*corev1.Pod
	for i := range 6 {
		p := testPod("web", "1")
		if i%2 == 1 {
			p = anti(testPod("db", "1"))
		}
		bound = append(bound, p)
		if err := s.AddPod(info(p), "a"); err != nil {
			t.Fatal(err)
		}
	}
	ni := s.NodeInfo("a")
	lists := func() string {
		names := func(pods []fwk.PodInfo) (out []string) {
			for _, pi := range pods {
				out = append(out, pi.GetPod().Name)
			}
			return out
		}
		return fmt.Sprint(names(ni.Pods), names(ni.PodsWithAffinity), names(ni.PodsWithRequiredAntiAffinity), layout(s))
	}
	before := lists()
	s.Fork()
	for i := range 5 {
		p := testPod("web", "1")
		if i%2 == 0 {
			p = anti(testPod("db", "1"))
		}
		if err := s.AddPod(info(p), "a"); err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			if err := s.RemovePod(bound[3], "a"); err != nil {
				t.Fatal(err)
			}
		}
	}
	s.Revert()
	if got := lists(); got != before {
		t.Fatalf("after revert %s, want %s", got, before)
	}
}

func TestSnapshotErrorsNameWhatIsMissing(t *testing.T) {
	s := NewSnapshot()
	if _, err := s.AddNode(testNode("a", "1", "z")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddNode(testNode("a", "1", "z")); err == nil {
		t.Fatal("a duplicate node was accepted")
	}
	if err := s.AddPod(info(testPod("p", "1")), "nope"); err == nil {
		t.Fatal("a pod on a missing node was accepted")
	}
	if err := s.RemoveNode("nope"); err == nil {
		t.Fatal("removing a missing node succeeded")
	}
}

func TestSnapshotTracksAffinityAndPVCs(t *testing.T) {
	s := NewSnapshot()
	_, _ = s.AddNode(testNode("a", "4", "z"))
	_, _ = s.AddNode(testNode("b", "4", "z"))
	p := testPod("db", "1")
	p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, TopologyKey: corev1.LabelHostname}}}}
	p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-0"}}}}
	lister := s.NodeInfos()
	if l, _ := lister.HavePodsWithRequiredAntiAffinityList(); len(l) != 0 {
		t.Fatal("anti-affinity list not empty")
	}
	s.Fork()
	_ = s.AddPod(info(p), "b")
	if l, _ := lister.HavePodsWithRequiredAntiAffinityList(); len(l) != 1 || l[0].Node().Name != "b" {
		t.Fatalf("anti-affinity list %v, want [b]", l)
	}
	if !s.StorageInfos().IsPVCUsedByPods("ns/data-0") {
		t.Fatal("PVC use not tracked")
	}
	s.Revert()
	if l, _ := lister.HavePodsWithAffinityList(); len(l) != 0 || s.StorageInfos().IsPVCUsedByPods("ns/data-0") {
		t.Fatal("revert left affinity or PVC tracking behind")
	}
}

func newTestChecker(t *testing.T, s *Snapshot) *Checker {
	t.Helper()
	// These pods have no volumes: the plugins need no listers.
	c, err := NewChecker(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCheckerUsesTheSchedulerFilters(t *testing.T) {
	s := NewSnapshot()
	n := testNode("n", "4", "zone-a")
	n.Spec.Taints = []corev1.Taint{{Key: "k", Value: "v", Effect: corev1.TaintEffectNoSchedule}}
	ni, _ := s.AddNode(n)
	c := newTestChecker(t, s)
	ctx := context.Background()
	check := func(p *corev1.Pod) string {
		gc, err := c.CheckGroup(ctx, &PodGroup{Pods: []*corev1.Pod{p}})
		if err != nil {
			t.Fatal(err)
		}
		return c.Fits(ctx, gc, ni).Message()
	}
	tolerating := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
		return p
	}
	if msg := check(testPod("a", "1")); msg != "node(s) had untolerated taint(s)" {
		t.Fatalf("intolerant pod: %q", msg)
	}
	if msg := check(tolerating(testPod("a", "1"))); msg != "" {
		t.Fatalf("tolerating pod rejected: %q", msg)
	}
	big := tolerating(testPod("a", "5"))
	if msg := check(big); msg != "Insufficient cpu" {
		t.Fatalf("5-CPU pod on 4 CPU: %q", msg)
	}
	sel := tolerating(testPod("a", "1"))
	sel.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: "zone-b"}
	if msg := check(sel); msg != "node(s) didn't match Pod's node affinity/selector" {
		t.Fatalf("zone-b selector: %q", msg)
	}
	port := tolerating(testPod("a", "1"))
	port.Spec.Containers[0].Ports = []corev1.ContainerPort{{HostPort: 8080, ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
	placed := port.DeepCopy()
	placed.UID, placed.Name = "placed", "placed"
	_ = s.AddPod(info(placed), "n")
	if msg := check(port); msg != "node(s) didn't have free ports for the requested pod ports" {
		t.Fatalf("host port clash: %q", msg)
	}
}

func TestPlaceGroupFillsNodesInOrderAndStops(t *testing.T) {
	s := NewSnapshot()
	_, _ = s.AddNode(testNode("a", "4", "z"))
	_, _ = s.AddNode(testNode("b", "2", "z"))
	c := newTestChecker(t, s)
	ctx := context.Background()
	var pods []*corev1.Pod
	for i := 0; i < 8; i++ {
		pods = append(pods, testPod("web", "1"))
	}
	g := &PodGroup{Pods: pods}
	gc, _ := c.CheckGroup(ctx, g)
	placed, unplaced, err := c.PlaceGroup(ctx, gc, pods, s.Infos())
	if err != nil {
		t.Fatal(err)
	}
	if len(placed) != 6 || len(unplaced) != 2 || unplaced[0] != pods[6] {
		t.Fatalf("placed %d, unplaced %d: want 6 (4 on a, 2 on b) and the last 2", len(placed), len(unplaced))
	}
	if s.NodeInfo("a").Requested.MilliCPU != 4000 || s.NodeInfo("b").Requested.MilliCPU != 2000 {
		t.Fatalf("requests a=%d b=%d", s.NodeInfo("a").Requested.MilliCPU, s.NodeInfo("b").Requested.MilliCPU)
	}
}

func TestCatchUpSeesAntiAffinityPlacedAfterPreFilter(t *testing.T) {
	s := NewSnapshot()
	_, _ = s.AddNode(testNode("a", "8", "z"))
	c := newTestChecker(t, s)
	ctx := context.Background()
	web := &PodGroup{Pods: []*corev1.Pod{testPod("web", "1")}}
	gc, _ := c.CheckGroup(ctx, web)
	// A pod that refuses to share a host with web pods is placed after
	// web's PreFilter ran.
	guard := testPod("guard", "1")
	guard.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, TopologyKey: corev1.LabelHostname}}}}
	pi := info(guard)
	_ = s.AddPod(pi, "a")
	if !c.Fits(ctx, gc, s.NodeInfo("a")).IsSuccess() {
		t.Fatal("stale check should still say the pod fits: this test needs a stale state to start from")
	}
	fresh, err := c.CatchUp(ctx, gc, []Placed{{Info: pi, Node: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if st := c.Fits(ctx, fresh, s.NodeInfo("a")); st.IsSuccess() {
		t.Fatal("after catching up, the web pod must be rejected next to the guard")
	}
}

func TestEquivalenceGroups(t *testing.T) {
	a1, a2 := testPod("a", "1"), testPod("a", "1")
	bigger := testPod("a", "2")
	other := testPod("b", "1")
	relabelled := testPod("a", "1")
	relabelled.Labels["tier"] = "x"
	groups := NewEquivalenceKeys().Group([]*corev1.Pod{a1, other, a2, bigger, relabelled})
	if len(groups) != 4 || len(groups[0].Pods) != 2 || groups[0].Pods[1] != a2 || groups[1].Pods[0] != other {
		t.Fatalf("groups %d (%v): want a1+a2 together, the rest alone", len(groups), groups)
	}
	if groups[0].Owner != "rs-a" {
		t.Fatalf("owner %q", groups[0].Owner)
	}
}

func TestTemplateCopiesAreTheirOwnWhereTheyDiffer(t *testing.T) {
	tmplNode := testNode("template-node-for-g", "4", "z")
	ds := testPod("agent", "100m")
	tmpl, err := NewNodeTemplate("g", tmplNode, []*corev1.Pod{ds})
	if err != nil {
		t.Fatal(err)
	}
	s := NewSnapshot()
	a, errA := tmpl.AddCopy(s, "g-new-0")
	b, errB := tmpl.AddCopy(s, "g-new-1")
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if a.Node().Labels[corev1.LabelHostname] != "g-new-0" || b.Node().Labels[corev1.LabelHostname] != "g-new-1" ||
		tmplNode.Labels[corev1.LabelHostname] != "template-node-for-g" || tmplNode.Labels[TemplateNodeLabel] != "" {
		t.Fatalf("hostnames %q, %q, template's %q: each copy must have its own labels and leave the template's alone",
			a.Node().Labels[corev1.LabelHostname], b.Node().Labels[corev1.LabelHostname], tmplNode.Labels[corev1.LabelHostname])
	}
	pa, pb := a.Pods[0].GetPod(), b.Pods[0].GetPod()
	if pa.Spec.NodeName != "g-new-0" || pb.Spec.NodeName != "g-new-1" || ds.Spec.NodeName != "" || pa.UID == pb.UID {
		t.Fatalf("pods on %q and %q (UIDs %q, %q), template pod on %q", pa.Spec.NodeName, pb.Spec.NodeName, pa.UID, pb.UID, ds.Spec.NodeName)
	}
	if a.Allocatable.MilliCPU != 4000 || len(a.Pods) != 1 || a.Requested.MilliCPU != 100 {
		t.Fatalf("copy: allocatable %d, %d pods, requested %d", a.Allocatable.MilliCPU, len(a.Pods), a.Requested.MilliCPU)
	}
}

func TestSnapshotVersionMovesWhenAForkIsKept(t *testing.T) {
	s := NewSnapshot()
	if _, err := s.AddNode(testNode("a", "4", "z")); err != nil {
		t.Fatal(err)
	}
	v := s.Version()
	s.Fork()
	s.Commit()
	if s.Version() != v {
		t.Fatal("a fork kept without changes moved the version")
	}
	s.Fork()
	_ = s.AddPod(info(testPod("web", "1")), "a")
	s.Fork()
	_ = s.AddPod(info(testPod("web", "1")), "a")
	s.Commit()
	if s.Version() != v {
		t.Fatal("the version moved while a fork is still open")
	}
	s.Commit()
	if s.Version() == v {
		t.Fatal("changes kept outside every fork left the version where it was")
	}
}
