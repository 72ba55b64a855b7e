package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestStartingNodeNoPlanNeedsIsRemoved: of the 2 planned nodes, still
// starting, one loses every pod planned for it (the workloads scale down,
// the pods nominated to it going first, as pods the scheduler binds
// elsewhere leave it), while the other keeps its two. tidal removes the
// first before it is ready (--scale-down-unused-new-nodes-enabled, on by default):
// it would otherwise come up empty and wait for scale-down. The other stays,
// and its pods bind there once it is ready: one node runs the mix.
func TestStartingNodeNoPlanNeedsIsRemoved(t *testing.T) {
	parallel(t)
	ns, tl, nominated, h := nominatedMix(t, "ne", 5, scaleUpFlags)
	vacated := someNode(nominated)
	kept := map[string]string{}
	for pod, node := range nominated {
		if node == vacated {
			// The ReplicaSet controller deletes the pods of lowest
			// deletion cost first.
			setDeletionCost(t, ns, pod, -100)
		} else {
			kept[pod] = node
		}
	}
	scaleDeployment(t, ns, "small", 1)
	scaleDeployment(t, ns, "big", 1)
	poll(t, 60*time.Second, "starting node "+vacated+" removed", func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, "ne")
		if err != nil {
			return false, err
		}
		for _, n := range nodes {
			if n.Name == vacated {
				return false, nil
			}
		}
		return len(nodes) == 1, nil
	})
	removed, err := metricValue(tl.Address, `tidal_scaled_down_nodes_total{node_group="ne",reason="empty"}`)
	if err != nil || removed != 1 {
		t.Fatalf("tidal_scaled_down_nodes_total of ne: %v (%v), want 1", removed, err)
	}
	releaseNodes(t, ns, "ne")
	waitRunning(t, ns, "small", 1, 60*time.Second)
	waitRunning(t, ns, "big", 1, 60*time.Second)
	bound := podNodes(t, ns)
	for pod, node := range kept {
		if bound[pod] != node && !h.clearedBeforeBinding(pod, bound[pod]) {
			t.Errorf("pod %s bound to %s, nominated to %s; pods seen:%s", pod, bound[pod], node, h)
		}
	}
	assertRequested(t, tl, "ne", 1, 2, 0)
}

// setDeletionCost sets a pod's controller.kubernetes.io/pod-deletion-cost.
func setDeletionCost(t *testing.T, ns, name string, cost int) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		"controller.kubernetes.io/pod-deletion-cost": fmt.Sprint(cost)}}})
	if _, err := cluster(t).Client.CoreV1().Pods(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("set the deletion cost of %s: %v", name, err)
	}
}
