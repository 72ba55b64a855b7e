package integration

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// TestScaleUpDecidesAgainWhenNewNodesLeaveAPodOut: 2 pods of 3 CPU get 2
// new nodes of 4 CPU. While the nodes start (behind a startup taint the test
// takes off), the scheduler puts another pod on one of them, a pod that
// tolerates every taint and is bound to that node, as DaemonSet pods are,
// and takes the room the plan counted on. Once the nodes are ready one of
// the 2 pods finds no room, and tidal decides again at once, with an hour
// between its scans and the pods found unschedulable long before: a third
// node.
func TestScaleUpDecidesAgainWhenNewNodesLeaveAPodOut(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "rp-")
	const key = "startup-taint.cluster-autoscaler.kubernetes.io/setup"
	groups := writeStartupTaintedGroup(t, "rp-g", key)
	ns := newNamespace(t)
	testenv.DumpOnFailure(t, cluster(t).Client, ns, "rp-")
	createDeployment(t, deployment(ns, "web", 2, "3", "1Gi"))
	waitUnschedulable(t, ns, "web", 2)
	startTidal(t, append(wakeOnlyFlags, "--local-node-groups="+groups)...)

	var started []string
	poll(t, 60*time.Second, "the 2 new nodes to register", func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, "rp-g")
		started = started[:0]
		for _, n := range nodes {
			started = append(started, n.Name)
		}
		return len(started) == 2, err
	})
	create(t, cluster(t).Client.CoreV1().Pods(ns).Create, boundTo(ns, "agent", started[0], "3"))
	poll(t, 60*time.Second, "the agent pod on "+started[0], func(ctx context.Context) (bool, error) {
		p, err := cluster(t).Client.CoreV1().Pods(ns).Get(ctx, "agent", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName == started[0], err
	})
	// The setup agent takes the taint off each node as it comes.
	poll(t, 60*time.Second, "2 web pods Running", func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, "rp-g")
		for i := range nodes {
			if hasTaintKey(&nodes[i], key) {
				removeTaint(t, nodes[i].Name, key)
			}
		}
		if err != nil {
			return false, err
		}
		pods, err := cluster(t).Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == 2, err
	})
	if n := nodeCount(t, "rp-g"); n != 3 {
		t.Fatalf("rp-g has %d nodes, want 3: 2 planned, and 1 more for the pod the agent left without room", n)
	}
}

// boundTo is a pod of the given cpu that the scheduler can only place on
// node, and that tolerates every taint, as a DaemonSet's pods do.
func boundTo(ns, name, node, cpu string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
					Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "c", Image: "pause", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
		},
	}
}
