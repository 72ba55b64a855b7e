package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/core/act"
	"github.com/tidal-autoscaler/tidal/core/nominate"
)

// The real kube-scheduler follows the nominations the live actuator writes
// (NominatedNodeNameForExpectation): pods nominated to the fuller of two
// nodes bind there, where its default scoring (least allocated) puts a pod
// without a nomination on the emptier one.
//
// Every pod is placed by the scheduler and may go only to the test's two
// nodes: a pod created with its node name set reaches the scheduler's cache
// through its informer, and one that has not yet would leave the scheduler
// seeing two equally empty nodes.
func TestSchedulerFollowsNominations(t *testing.T) {
	parallel(t)
	e := newActuatorEnv(t, "nominate", 2)
	nodes := e.readyNodes(t, 2)
	full, empty := nodes[0].Name, nodes[1].Name
	newPod := func(name string, gated bool, onto ...string) *corev1.Pod {
		t.Helper()
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
			Spec: corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](0),
				Affinity:    onlyNodes(onto...),
				Tolerations: []corev1.Toleration{{Key: actuatorTaint, Operator: corev1.TolerationOpExists}},
				Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}}}}},
		}
		if gated {
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/held"}}
		}
		got, err := cluster(t).Client.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create pod %s: %v", name, err)
		}
		return got
	}
	// Already on full: 1 CPU of its 2, so that scoring clearly prefers
	// empty. The scheduler binds them, so its cache holds them before the
	// pods below are scheduled.
	for i := range 5 {
		newPod(fmt.Sprintf("bound-%d", i), false, full)
	}
	for i := range 5 {
		waitBound(t, e.ns, fmt.Sprintf("bound-%d", i), full)
	}
	a := act.NewLive(e.deps)
	var held []*corev1.Pod
	var set []nominate.Change
	for i := range 3 {
		p := newPod(fmt.Sprintf("nominated-%d", i), true, full, empty)
		held = append(held, p)
		set = append(set, nominate.Change{UID: p.UID, Namespace: e.ns, Name: p.Name, Node: full})
	}
	if failed := a.Nominate(e.ctx, nil, set); len(failed) != 0 {
		t.Fatalf("nominations failed: %v", failed)
	}
	for _, p := range held {
		patch := []byte(`{"spec":{"schedulingGates":null}}`)
		if _, err := cluster(t).Client.CoreV1().Pods(e.ns).Patch(e.ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("ungate %s: %v", p.Name, err)
		}
	}
	free := newPod("free", false, full, empty)
	want := map[string]string{free.Name: empty}
	for _, p := range held {
		want[p.Name] = full
	}
	for name, node := range want {
		waitBound(t, e.ns, name, node)
	}
}

// onlyNodes is an affinity that admits only the named nodes (one term a
// node: a field selector takes one value).
func onlyNodes(names ...string) *corev1.Affinity {
	terms := make([]corev1.NodeSelectorTerm, 0, len(names))
	for _, n := range names {
		terms = append(terms, corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n}}}})
	}
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
	}}
}

// waitBound waits until the pod is bound and fails the test if it is bound
// elsewhere than node.
func waitBound(t *testing.T, ns, name, node string) {
	t.Helper()
	poll(t, 30*time.Second, fmt.Sprintf("pod %s bound", name), func(ctx context.Context) (bool, error) {
		p, err := cluster(t).Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.Spec.NodeName == "" {
			return false, err
		}
		if p.Spec.NodeName != node {
			t.Errorf("pod %s bound to %s, want %s (nominated: %q)", name, p.Spec.NodeName, node, p.Status.NominatedNodeName)
		}
		return true, nil
	})
}
