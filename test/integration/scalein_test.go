package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/core/scalein"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// pinned requires a Deployment's pods on one node.
func pinned(d *appsv1.Deployment, node string) *appsv1.Deployment {
	d.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
		}}}}}
	return d
}

// A scale-in by the pod loop removes the replica on the node scale-down
// would most like to empty (the middle one by name, so not the ReplicaSet's
// or the plan's tie-break by name), and that node then goes as an empty
// node: no pod is evicted.
func TestScaleInEmptiesTheLowestUtilizationNode(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "si-")
	ns := newNamespace(t)
	groups := "nodeGroups:\n- {name: si-a, minSize: 0, maxSize: 5, initialSize: 3, zone: z, cpu: '4', memory: 16Gi}\n"
	preloadNodes(t, groups)
	// One replica per node, none can move to another (anti-affinity).
	createDeployment(t, antiAffine(deployment(ns, "web", 3, "1", "1Gi")))
	webPods := waitRunning(t, ns, "web", 3, 30*time.Second)
	nodes, err := groupNodes(t, context.Background(), "si-a")
	if err != nil || len(nodes) != 3 {
		t.Fatalf("group si-a: %d nodes, %v", len(nodes), err)
	}
	names := []string{nodes[0].Name, nodes[1].Name, nodes[2].Name}
	slices.Sort(names)
	// The first and last nodes are busy (75%), the middle one is at 25%.
	for i, n := range []string{names[0], names[2]} {
		createDeployment(t, pinned(deployment(ns, fmt.Sprintf("fill-%d", i), 1, "2", "1Gi"), n))
		waitRunning(t, ns, fmt.Sprintf("fill-%d", i), 1, 30*time.Second)
	}
	target := names[1]
	var victim string
	for _, p := range webPods {
		if p.Spec.NodeName == target {
			victim = p.Name
		}
	}
	if victim == "" {
		t.Fatalf("no web pod on %s", target)
	}

	tl := startTidal(t, append(scaleDownFlags, "--local-node-groups="+writeGroups(t, groups), "--hpa-objects=true", "--hpa-sync-period=1s")...)
	// The node loop has planned scale-down once: the middle node stays for
	// want of room for its replica.
	poll(t, 60*time.Second, "a scale-down plan keeping the middle node for want of room", func(ctx context.Context) (bool, error) {
		v, err := metricValue(tl.Address, `tidal_unremovable_nodes_count{reason="NoPlaceToMovePods"}`)
		return v == 1, err
	})
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 2,
		},
	}
	if _, err := cluster(t).Client.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(context.Background(), hpa, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create HorizontalPodAutoscaler: %v", err)
	}
	poll(t, 60*time.Second, "web scaled in to 2 replicas, without the one on "+target, func(ctx context.Context) (bool, error) {
		pods, err := cluster(t).Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err
		}
		var on []string
		for _, p := range pods.Items {
			on = append(on, fmt.Sprintf("%s on %s (cost %q)", p.Name, p.Spec.NodeName, p.Annotations[scalein.CostAnnotation]))
		}
		if len(pods.Items) != 2 {
			return false, fmt.Errorf("pods %v", on)
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == target {
				return false, fmt.Errorf("the ReplicaSet kept the replica on %s: %v", target, on)
			}
		}
		return true, nil
	})
	poll(t, 60*time.Second, target+" removed by scale-down", func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, "si-a")
		return len(nodes) == 2 && !slices.ContainsFunc(nodes, func(n corev1.Node) bool { return n.Name == target }), err
	})
	evicted, err := testenv.MetricSum(tl.Address, "tidal_evicted_pods_total")
	if err != nil || evicted != 0 {
		t.Errorf("tidal_evicted_pods_total %v (%v), want 0: the node should have emptied without evictions", evicted, err)
	}
	written, err := metricValue(tl.Address, `tidal_pod_deletion_cost_writes_total{result="success"}`)
	if err != nil || written < 1 {
		t.Errorf("tidal_pod_deletion_cost_writes_total{result=\"success\"} %v (%v), want at least 1", written, err)
	}
	if events, err := eventsFor(t, context.Background(), ns, "ScaleDown"); err != nil || len(events) != 0 {
		t.Errorf("ScaleDown events in %s: %d (%v), want none", ns, len(events), err)
	}
}
