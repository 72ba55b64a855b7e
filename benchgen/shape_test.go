package benchgen

import (
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
)

// The expected objects below are written out from the spec by hand; the
// drawn numbers (util 95 for node-00004, the requests and apps of its pods,
// the pending group shapes) were computed with an independent script.

func wantTime() metav1.Time {
	return metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
}

func wantMeta(name, namespace string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: namespace, UID: types.UID("uid-" + name),
		CreationTimestamp: wantTime(), Labels: labels,
	}
}

func wantResources(cpu, mem string, pods bool) corev1.ResourceList {
	rl := corev1.ResourceList{"cpu": resource.MustParse(cpu), "memory": resource.MustParse(mem)}
	if pods {
		rl["pods"] = resource.MustParse("110")
	}
	return rl
}

func wantNode(name, group, zone string, tainted bool) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: wantMeta(name, "", map[string]string{
			"kubernetes.io/hostname":      name,
			"topology.kubernetes.io/zone": zone,
			"cabench.io/nodegroup":        group,
			"kubernetes.io/os":            "linux",
		}),
		Spec: corev1.NodeSpec{ProviderID: name},
		Status: corev1.NodeStatus{
			Capacity:    wantResources("4", "16Gi", true),
			Allocatable: wantResources("4", "16Gi", true),
			Conditions: []corev1.NodeCondition{{
				Type: "Ready", Status: "True", LastTransitionTime: wantTime(),
			}},
		},
	}
	if tainted {
		n.Spec.Taints = []corev1.Taint{{Key: "cabench.io/dedicated", Value: "batch", Effect: "NoSchedule"}}
	}
	return n
}

func wantToleration() []corev1.Toleration {
	return []corev1.Toleration{{Key: "cabench.io/dedicated", Operator: "Equal", Value: "batch", Effect: "NoSchedule"}}
}

func wantPod(name, app, cpu, mem string) *corev1.Pod {
	yes := true
	return &corev1.Pod{
		ObjectMeta: func() metav1.ObjectMeta {
			m := wantMeta(name, "default", map[string]string{"app": app})
			m.OwnerReferences = []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs-" + app,
				UID: types.UID("uid-rs-" + app), Controller: &yes,
			}}
			return m
		}(),
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Resources: corev1.ResourceRequirements{Requests: wantResources(cpu, mem, false)},
		}}},
	}
}

func wantPending(name, app, cpu, mem string) *corev1.Pod {
	p := wantPod(name, app, cpu, mem)
	p.Status = corev1.PodStatus{Phase: "Pending", Conditions: []corev1.PodCondition{{
		Type: "PodScheduled", Status: "False", Reason: "Unschedulable", LastTransitionTime: wantTime(),
	}}}
	return p
}

func checkEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("%s differs from the spec (-got +want):\n%s", what, diff.Diff(got, want))
	}
}

func TestNodeShape(t *testing.T) {
	c := Generate(S1())
	checkEqual(t, "node-00000", c.Nodes[0], wantNode("node-00000", "ng-00", "zone-a", false))
	checkEqual(t, "node-00004", c.Nodes[4], wantNode("node-00004", "ng-04", "zone-b", true))
	if c.NodeUtil[4] != 95 {
		t.Errorf("node-00004 util = %d, want 95", c.NodeUtil[4])
	}
	n := c.Nodes[7] // group 2: 16 cores, 64 GiB, zone-c
	want := wantNode("node-00007", "ng-02", "zone-c", false)
	want.Status.Capacity = wantResources("16", "64Gi", true)
	want.Status.Allocatable = wantResources("16", "64Gi", true)
	checkEqual(t, "node-00007", n, want)
}

func TestNodeGroupShape(t *testing.T) {
	c := Generate(S1())
	g := c.NodeGroups[4]
	tmpl := g.Template
	g.Template = nil
	want := NodeGroup{
		ID: "ng-04", MinSize: 0, MaxSize: 100000, TargetSize: 20, Zone: "zone-b",
		Taint: &corev1.Taint{Key: "cabench.io/dedicated", Value: "batch", Effect: "NoSchedule"},
	}
	checkEqual(t, "node group ng-04", g, want)
	checkEqual(t, "template of ng-04", tmpl, wantNode("template-node-for-ng-04", "ng-04", "zone-b", true))
	if c.NodeGroups[0].Taint != nil {
		t.Errorf("ng-00 has taint %v, want none", c.NodeGroups[0].Taint)
	}
}

func TestRunningPodShape(t *testing.T) {
	c := Generate(S1())
	first := wantPod("run-00004-000", "run-059", "122m", "518Mi")
	first.Spec.NodeName = "node-00004"
	first.Spec.Tolerations = wantToleration()
	first.Status.Phase = "Running"
	checkEqual(t, "run-00004-000", c.RunningPods[4*30], first)

	last := wantPod("run-00004-029", "run-018", "127m", "513Mi")
	last.Spec.NodeName = "node-00004"
	last.Spec.Tolerations = wantToleration()
	last.Status.Phase = "Running"
	checkEqual(t, "run-00004-029", c.RunningPods[4*30+29], last)

	untainted := c.RunningPods[0]
	if untainted.Spec.Tolerations != nil || untainted.Spec.NodeName != "node-00000" {
		t.Errorf("run-00000-000: tolerations %v on %q, want none on node-00000",
			untainted.Spec.Tolerations, untainted.Spec.NodeName)
	}
}

func TestPendingPodShapes(t *testing.T) {
	c := Generate(S1())
	zoneC := wantPending("pend-000-00000", "pend-000", "3", "512Mi")
	zoneC.Spec.NodeSelector = map[string]string{"topology.kubernetes.io/zone": "zone-c"}
	zoneB := wantPending("pend-001-00029", "pend-001", "3", "2Gi")
	zoneB.Spec.NodeSelector = map[string]string{"topology.kubernetes.io/zone": "zone-b"}
	tolerating := wantPending("pend-002-00000", "pend-002", "2", "8Gi")
	tolerating.Spec.Tolerations = wantToleration()
	spread := wantPending("pend-003-00000", "pend-003", "1", "2Gi")
	spread.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pend-003"}},
			TopologyKey:   "kubernetes.io/hostname",
		}},
	}}
	tests := []struct {
		class int
		index int
		want  *corev1.Pod
	}{
		{0, 0, zoneC},
		{1, 59, zoneB},
		{2, 60, tolerating},
		{3, 90, spread},
		{4, 120, wantPending("pend-004-00000", "pend-004", "3", "512Mi")},
		{9, 299, wantPending("pend-009-00029", "pend-009", "500m", "512Mi")},
	}
	for _, tt := range tests {
		checkEqual(t, "pending pod of class "+strconv.Itoa(tt.class), c.PendingPods[tt.index], tt.want)
	}
}

func TestReplicaSets(t *testing.T) {
	c := Generate(S1())
	byName := map[string]*appsv1.ReplicaSet{}
	for _, rs := range c.ReplicaSets {
		byName[rs.Name] = rs
	}
	pods := map[string]int32{}
	for _, list := range [][]*corev1.Pod{c.RunningPods, c.PendingPods} {
		for _, p := range list {
			ref := p.OwnerReferences[0]
			rs := byName[ref.Name]
			if rs == nil || rs.UID != ref.UID || rs.Labels["app"] != p.Labels["app"] {
				t.Fatalf("pod %s: owner %s/%s has no matching ReplicaSet", p.Name, ref.Name, ref.UID)
			}
			pods[ref.Name]++
		}
	}
	for name, rs := range byName {
		if *rs.Spec.Replicas != pods[name] || rs.Status.Replicas != pods[name] {
			t.Errorf("%s: replicas %d/%d, want %d pods", name, *rs.Spec.Replicas, rs.Status.Replicas, pods[name])
		}
	}
	replicas := int32(30)
	want := &appsv1.ReplicaSet{
		ObjectMeta: wantMeta("rs-pend-003", "default", map[string]string{"app": "pend-003"}),
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pend-003"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "pend-003"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
			},
		},
		Status: appsv1.ReplicaSetStatus{Replicas: 30},
	}
	checkEqual(t, "rs-pend-003", byName["rs-pend-003"], want)
	if got := c.ReplicaSets[0].Name; got != "rs-run-000" {
		t.Errorf("first ReplicaSet %s, want rs-run-000", got)
	}
}
