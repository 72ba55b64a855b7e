package core

import (
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/expander"
)

func node(name, cpu, mem string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	res := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
		corev1.ResourcePods: resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status:     corev1.NodeStatus{Allocatable: res, Capacity: res},
	}
}

func pod(name, cpu, mem string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
		}}}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		}}},
	}
}

func pods(n int, cpu, mem string) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = pod("p", cpu, mem)
	}
	return out
}

var first = expander.Random{Rand: rand.New(rand.NewPCG(1, 2))}

func TestPlanScaleUpSizesByRequests(t *testing.T) {
	groups := []GroupState{{ID: "a", Template: node("t", "4", "16Gi", nil), Target: 1, Max: 10}}
	plan := PlanScaleUp(pods(10, "1", "1Gi"), nil, groups, first)
	if plan.Option == nil || plan.Option.NodeGroup != "a" || plan.Option.NodeCount != 3 {
		t.Fatalf("plan = %+v (%s), want 3 nodes of a", plan.Option, plan.Reason)
	}
}

func TestPlanScaleUpDropsPodsThatFitExistingNodes(t *testing.T) {
	existing := []NodeState{{Node: node("n1", "4", "16Gi", nil), Pods: []*corev1.Pod{pod("running", "1", "1Gi")}}}
	groups := []GroupState{{ID: "a", Template: node("t", "4", "16Gi", nil), Target: 1, Max: 10}}
	plan := PlanScaleUp(pods(3, "1", "1Gi"), existing, groups, first)
	if plan.Option != nil || len(plan.Remaining) != 0 {
		t.Fatalf("3 pods fit on the free 3 CPU, but plan = %+v remaining %d", plan.Option, len(plan.Remaining))
	}
	plan = PlanScaleUp(pods(5, "1", "1Gi"), existing, groups, first)
	if plan.Option == nil || plan.Option.NodeCount != 1 || len(plan.Remaining) != 2 {
		t.Fatalf("2 pods left over need 1 node, plan = %+v remaining %d", plan.Option, len(plan.Remaining))
	}
}

func TestPlanScaleUpRespectsMaxSizeAndUpcoming(t *testing.T) {
	groups := []GroupState{{ID: "a", Template: node("t", "4", "16Gi", nil), Target: 8, Max: 9}}
	plan := PlanScaleUp(pods(20, "1", "1Gi"), nil, groups, first)
	if plan.Option == nil || plan.Option.NodeCount != 1 {
		t.Fatalf("only 1 node left below max, plan = %+v", plan.Option)
	}
	groups[0].Target = 9
	if plan := PlanScaleUp(pods(20, "1", "1Gi"), nil, groups, first); plan.Option != nil {
		t.Fatalf("group at max size grew: %+v", plan.Option)
	}
	groups = []GroupState{{ID: "a", Template: node("t", "4", "16Gi", nil), Target: 3, Max: 9, Upcoming: 2}}
	if plan := PlanScaleUp(pods(20, "1", "1Gi"), nil, groups, first); plan.Option != nil || plan.Reason == "" {
		t.Fatalf("scaled while nodes are coming up: %+v", plan)
	}
}

func TestPlanScaleUpHonoursSelectorsAndTaints(t *testing.T) {
	taint := corev1.Taint{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}
	groups := []GroupState{
		{ID: "tainted", Template: node("t1", "4", "16Gi", map[string]string{"zone": "a"}, taint), Max: 5},
		{ID: "zone-b", Template: node("t2", "4", "16Gi", map[string]string{"zone": "b"}), Max: 5},
	}
	p := pod("p", "1", "1Gi")
	p.Spec.NodeSelector = map[string]string{"zone": "a"}
	if plan := PlanScaleUp([]*corev1.Pod{p}, nil, groups, first); plan.Option != nil {
		t.Fatalf("pod without toleration scaled the tainted group: %+v", plan.Option)
	}
	p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "batch", Effect: corev1.TaintEffectNoSchedule}}
	plan := PlanScaleUp([]*corev1.Pod{p}, nil, groups, first)
	if plan.Option == nil || plan.Option.NodeGroup != "tainted" {
		t.Fatalf("tolerating pod with selector zone=a should grow 'tainted', got %+v", plan.Option)
	}
	big := pod("big", "5", "1Gi")
	if plan := PlanScaleUp([]*corev1.Pod{big}, nil, groups, first); plan.Option != nil {
		t.Fatalf("a pod larger than any node grew a group: %+v", plan.Option)
	}
}

func TestIsUnschedulable(t *testing.T) {
	p := pod("p", "1", "1Gi")
	if !IsUnschedulable(p) {
		t.Fatal("unschedulable pod not recognised")
	}
	bound := p.DeepCopy()
	bound.Spec.NodeName = "n"
	deleting := p.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{}
	gated := p.DeepCopy()
	gated.Status.Conditions[0].Reason = corev1.PodReasonSchedulingGated
	fresh := p.DeepCopy()
	fresh.Status.Conditions = nil
	for name, q := range map[string]*corev1.Pod{"bound": bound, "deleting": deleting, "gated": gated, "fresh": fresh} {
		if IsUnschedulable(q) {
			t.Errorf("%s pod counted as unschedulable", name)
		}
	}
}
