package scaledown

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/simulator"
	"github.com/tidal-autoscaler/tidal/simulator/checkertest"
)

var now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type cluster struct {
	t       *testing.T
	snap    *simulator.Snapshot
	checker *simulator.Checker
	// client feeds the informers whose objects the checker's volume and
	// affinity plugins read.
	client *fake.Clientset
	serial int
	owners map[string]bool
}

func newCluster(t *testing.T) *cluster {
	// The client's objects feed the volume and affinity plugins' listers.
	client := fake.NewSimpleClientset()
	snap, c := checkertest.New(t, client)
	return &cluster{t: t, snap: snap, checker: c, client: client, owners: map[string]bool{}}
}

func (c *cluster) node(name, cpu string) {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods: resource.MustParse("110")}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res}}
	if _, err := c.snap.AddNode(n); err != nil {
		c.t.Fatal(err)
	}
}

// pod puts a pod of an existing ReplicaSet on a node; edit changes it.
func (c *cluster) pod(node, app, cpu string, edit func(*corev1.Pod)) *corev1.Pod {
	c.serial++
	name := fmt.Sprintf("%s-%d", app, c.serial)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name), Labels: map[string]string{"app": app},
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: app, Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")},
		}}}},
	}
	c.owners[app] = true
	if edit != nil {
		edit(p)
	}
	pi, _ := framework.NewPodInfo(p)
	if err := c.snap.AddPod(pi, node); err != nil {
		c.t.Fatal(err)
	}
	return p
}

// input is the plan's input for the candidates, all of group g.
func (c *cluster) input(candidates []string) Input {
	var cands []Candidate
	for _, n := range candidates {
		cands = append(cands, Candidate{Name: n, Group: "g", Threshold: 0.5, IgnoreDaemonSetsUtilization: true})
	}
	return Input{
		Checker: c.checker, Candidates: cands, Groups: map[string]GroupSize{"g": {Target: 10, Min: 0}}, Now: now,
		Owners: c.ownerData(),
		Rules:  RuleOptions{SkipNodesWithSystemPods: true, SkipNodesWithLocalStorage: true, SkipNodesWithCustomControllerPods: true},
	}
}

func (c *cluster) plan(candidates []string, edit func(*Input)) *Plan {
	c.t.Helper()
	in := c.input(candidates)
	if edit != nil {
		edit(&in)
	}
	before := c.snap.Version()
	plan, err := Decide(context.Background(), in)
	if err != nil {
		c.t.Fatal(err)
	}
	if c.snap.Forked() || c.snap.Version() != before {
		c.t.Fatal("Decide left the snapshot changed")
	}
	return plan
}

func unneeded(p *Plan) []string {
	var out []string
	for _, u := range p.Unneeded {
		out = append(out, u.Node)
	}
	return out
}

func reasonOf(p *Plan, node string) string {
	for _, u := range p.Unremovable {
		if u.Node == node {
			return u.String()
		}
	}
	return ""
}

func TestUnderutilizedNodeWhosePodsFitIsUnneeded(t *testing.T) {
	c := newCluster(t)
	c.node("big", "8")
	c.node("small", "4")
	c.pod("big", "web", "3", nil)
	c.pod("small", "api", "1", nil)
	plan := c.plan([]string{"big", "small"}, nil)
	// small (25%) goes first, its pod moves to big; big (then 4/8 = 50%) is
	// not below the threshold.
	if got := unneeded(plan); len(got) != 1 || got[0] != "small" {
		t.Fatalf("unneeded %v, want [small]", got)
	}
	if r := reasonOf(plan, "big"); !strings.HasPrefix(r, "NotUnderutilized") && !strings.HasPrefix(r, "NoPlaceToMovePods") {
		t.Fatalf("big: %q", r)
	}
}

func TestRemovalsAddUp(t *testing.T) {
	c := newCluster(t)
	c.node("a", "4")
	c.node("b", "4")
	c.node("c", "4")
	// Each node at 1.5/4: any one can go, two cannot (4.5 CPU on 4).
	for _, n := range []string{"a", "b", "c"} {
		c.pod(n, "web", "1500m", nil)
	}
	plan := c.plan([]string{"a", "b", "c"}, nil)
	if len(plan.Unneeded) != 1 || !strings.HasPrefix(reasonOf(plan, "c"), "NoPlaceToMovePods") {
		t.Fatalf("unneeded %v, c: %q; want one removal, the next finding no room", unneeded(plan), reasonOf(plan, "c"))
	}
}

func TestEmptyNodesFirstAndDaemonSetsIgnored(t *testing.T) {
	c := newCluster(t)
	c.node("busy", "4")
	c.node("empty", "4")
	c.pod("busy", "web", "1", nil)
	c.pod("empty", "agent", "3", func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent", Controller: ptr.To(true)}}
	})
	plan := c.plan([]string{"busy", "empty"}, nil)
	if len(plan.Unneeded) == 0 || plan.Unneeded[0].Node != "empty" || !plan.Unneeded[0].Empty() || len(plan.Unneeded[0].Pods.DaemonSet) != 1 {
		t.Fatalf("plan %+v: want the node with only a DaemonSet pod first and empty", plan.Unneeded)
	}
	if plan.Unneeded[0].Utilization != 0 {
		t.Fatalf("DaemonSet pods count in utilization: %v", plan.Unneeded[0].Utilization)
	}
}

// Each node follows its group's ignoredaemonsetsutilization option: a
// node whose DaemonSet pod takes most of it is underutilized only where
// DaemonSet pods are left out of utilization.
func TestDaemonSetUtilizationPerGroup(t *testing.T) {
	for _, ignore := range []bool{true, false} {
		c := newCluster(t)
		c.node("stay", "8")
		c.node("agent-node", "4")
		c.pod("agent-node", "agent", "3", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent", Controller: ptr.To(true)}}
		})
		plan := c.plan([]string{"agent-node"}, func(in *Input) { in.Candidates[0].IgnoreDaemonSetsUtilization = ignore })
		if got := len(plan.Unneeded) == 1; got != ignore {
			t.Errorf("DaemonSet pods ignored: %v; unneeded %v, want %v (%s)", ignore, got, ignore, describe(plan))
		}
	}
}

func TestWhatKeepsANode(t *testing.T) {
	tests := []struct {
		name string
		edit func(*corev1.Pod)
		want string
	}{
		{"safe-to-evict false", func(p *corev1.Pod) { p.Annotations = map[string]string{SafeToEvictAnnotation: "false"} }, "NotSafeToEvictAnnotation"},
		{"bare pod", func(p *corev1.Pod) { p.OwnerReferences = nil }, "NotReplicated"},
		{"missing controller", func(p *corev1.Pod) { p.OwnerReferences[0].Name = "gone" }, "ControllerNotFound"},
		{"custom controller", func(p *corev1.Pod) { p.OwnerReferences[0].Kind = "MyOperator" }, "NotReplicated"},
		{"kube-system", func(p *corev1.Pod) { p.Namespace = metav1.NamespaceSystem }, "UnmovableKubeSystemPod"},
		{"emptyDir", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}, "LocalStorageRequested"},
		{"hostPath", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "logs", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"}}}}
		}, "LocalStorageRequested"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t)
			c.node("stay", "8")
			c.node("cand", "4")
			p := c.pod("cand", "web", "1", tc.edit)
			plan := c.plan([]string{"cand"}, nil)
			r := reasonOf(plan, "cand")
			if len(plan.Unneeded) != 0 || !strings.Contains(r, tc.want) || !strings.Contains(r, p.Name) {
				t.Fatalf("reason %q, unneeded %v: want %s naming pod %s", r, unneeded(plan), tc.want, p.Name)
			}
		})
	}
}

func TestAnnotationsThatAllowEviction(t *testing.T) {
	c := newCluster(t)
	c.node("stay", "8")
	c.node("a", "4")
	c.node("b", "4")
	c.pod("a", "web", "1", func(p *corev1.Pod) {
		p.OwnerReferences = nil
		p.Annotations = map[string]string{SafeToEvictAnnotation: "true"}
	})
	c.pod("b", "db", "1", func(p *corev1.Pod) {
		p.Annotations = map[string]string{SafeToEvictLocalVolumesAnnotation: "scratch, cache"}
		p.Spec.Volumes = []corev1.Volume{
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
		}
	})
	if got := unneeded(c.plan([]string{"a", "b"}, nil)); len(got) != 2 {
		t.Fatalf("safe-to-evict and listed local volumes should let both go, unneeded %v", got)
	}
}

func pdb(name, app string, allowed int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
}

func TestPDBBudgetsAcrossNodes(t *testing.T) {
	c := newCluster(t)
	c.node("stay", "16")
	for _, n := range []string{"a", "b", "c"} {
		c.node(n, "4")
		c.pod(n, "web", "1", nil)
	}
	plan := c.plan([]string{"a", "b", "c"}, func(in *Input) { in.PDBs = []*policyv1.PodDisruptionBudget{pdb("web-pdb", "web", 2)} })
	if len(plan.Unneeded) != 2 || !strings.Contains(reasonOf(plan, "c"), "NotEnoughPdb") || !strings.Contains(reasonOf(plan, "c"), "web-pdb") {
		t.Fatalf("unneeded %v, c: %q: the PDB allows 2 disruptions, so 2 nodes", unneeded(plan), reasonOf(plan, "c"))
	}
	plan = c.plan([]string{"a"}, func(in *Input) { in.PDBs = []*policyv1.PodDisruptionBudget{pdb("web-pdb", "web", 0)} })
	if len(plan.Unneeded) != 0 || !strings.Contains(reasonOf(plan, "a"), "allows 0 more disruption(s)") {
		t.Fatalf("a PDB allowing nothing must keep the node: %q", reasonOf(plan, "a"))
	}
	// A kube-system pod that a PDB covers may move.
	c.pod("a", "dns", "100m", func(p *corev1.Pod) { p.Namespace = metav1.NamespaceSystem })
	sysPDB := pdb("dns", "dns", 1)
	sysPDB.Namespace = metav1.NamespaceSystem
	plan = c.plan([]string{"a"}, func(in *Input) { in.PDBs = []*policyv1.PodDisruptionBudget{sysPDB} })
	if len(plan.Unneeded) != 1 {
		t.Fatalf("kube-system pod under a PDB: %q", reasonOf(plan, "a"))
	}
}

func TestGroupMinSizeAndUnready(t *testing.T) {
	c := newCluster(t)
	c.node("a", "4")
	c.node("b", "4")
	c.node("busy", "4")
	c.pod("busy", "web", "3", nil)
	plan := c.plan([]string{"a", "b"}, func(in *Input) { in.Groups["g"] = GroupSize{Target: 2, Min: 1} })
	if len(plan.Unneeded) != 1 || !strings.Contains(reasonOf(plan, "b"), "NodeGroupMinSizeReached") {
		t.Fatalf("min size 1 of 2: unneeded %v, b: %q", unneeded(plan), reasonOf(plan, "b"))
	}
	plan = c.plan([]string{"busy"}, func(in *Input) { in.Candidates[0].Unready = true })
	if len(plan.Unneeded) != 1 {
		t.Fatalf("an unready node is a candidate whatever its utilization: %q", reasonOf(plan, "busy"))
	}
}

func TestDeletingNodesReceiveNothing(t *testing.T) {
	c := newCluster(t)
	c.node("leaving", "8")
	c.node("cand", "4")
	c.pod("cand", "web", "1", nil)
	plan := c.plan([]string{"cand"}, func(in *Input) { in.Deleting = []string{"leaving"} })
	if !strings.HasPrefix(reasonOf(plan, "cand"), "NoPlaceToMovePods") {
		t.Fatalf("the only other node is being deleted: %q", reasonOf(plan, "cand"))
	}
}

// ownerData is what the node loop finds of the controllers of the pods in
// the snapshot: ReplicaSets are looked up, and those in c.owners exist.
func (c *cluster) ownerData() Owners {
	o := Owners{Kinds: map[string]bool{"ReplicaSet": true}, Existing: map[OwnerKey]bool{}}
	for _, ni := range c.snap.Infos() {
		for _, pi := range ni.GetPods() {
			p := pi.GetPod()
			if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "ReplicaSet" && c.owners[ref.Name] {
				o.Existing[OwnerKey{Kind: ref.Kind, Namespace: p.Namespace, Name: ref.Name}] = true
			}
		}
	}
	return o
}
