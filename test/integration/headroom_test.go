package integration

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
	"github.com/tidal-autoscaler/tidal/core"
)

// A Deployment asking for headroom for 4 more replicas gets the nodes for
// them, keeps them through scale-down, lets its new replicas start on them
// at once, and gives them back first when it stops asking.
func TestHeadroomIsKeptUsedAndGivenBack(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "hr-")
	ns := newNamespace(t)
	groups := "nodeGroups:\n- {name: hr-a, minSize: 1, maxSize: 5, initialSize: 1, zone: z, cpu: '4', memory: 16Gi, provisioningDelay: 1s}\n"
	preloadNodes(t, groups)
	web := deployment(ns, "web", 2, "1", "1Gi")
	web.Spec.Template.Spec.NodeSelector = map[string]string{local.NodeGroupLabel: "hr-a"}
	web.Annotations = map[string]string{core.HeadroomAnnotation: "4"}
	createDeployment(t, web)
	waitRunning(t, ns, "web", 2, 30*time.Second)
	startTidal(t, append(scaleDownFlags, "--local-node-groups="+writeGroups(t, groups))...)

	// 2 CPU of replicas and 4 of headroom: two 4-CPU nodes, kept although
	// the second one runs nothing (unneeded after 2s otherwise).
	poll(t, 30*time.Second, "a second node for the headroom", func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, "hr-a")
		return len(nodes) == 2 && isReady(&nodes[0]) && isReady(&nodes[1]), err
	})
	holdNodes(t, "hr-a", 2, 6*time.Second)
	before := nodeNames(t, "hr-a")

	// Three more replicas start on the headroom without waiting for a
	// node; the headroom is then made good again with a third node.
	scaleDeployment(t, ns, "web", 5)
	for _, p := range waitRunning(t, ns, "web", 5, 20*time.Second) {
		if !before[p.Spec.NodeName] {
			t.Fatalf("pod %s waited for the new node %s; the headroom nodes were %v", p.Name, p.Spec.NodeName, before)
		}
	}
	poll(t, 30*time.Second, "a third node to restore the headroom", func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, "hr-a")
		return len(nodes) == 3, err
	})

	// Without the annotation the empty headroom node goes first; the five
	// replicas keep their nodes.
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{core.HeadroomAnnotation: nil}}})
	if _, err := cluster(t).Client.AppsV1().Deployments(ns).Patch(context.Background(), "web", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, 60*time.Second, "the headroom node removed", func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, "hr-a")
		return len(nodes) == 2, err
	})
	for _, p := range waitRunning(t, ns, "web", 5, 10*time.Second) {
		if !before[p.Spec.NodeName] {
			t.Fatalf("pod %s runs on %s, not on the nodes kept %v", p.Name, p.Spec.NodeName, before)
		}
	}
}

// holdNodes fails if the group's node count leaves n within d.
func holdNodes(t *testing.T, group string, n int, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if got := nodeCount(t, group); got != n {
			t.Fatalf("group %s went to %d nodes; the headroom needs %d", group, got, n)
		}
	}
}

func nodeNames(t *testing.T, group string) map[string]bool {
	t.Helper()
	nodes, err := groupNodes(t, context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, n := range nodes {
		out[n.Name] = true
	}
	return out
}

func scaleDeployment(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"replicas": replicas}})
	if _, err := cluster(t).Client.AppsV1().Deployments(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("scale %s to %d: %v", name, replicas, err)
	}
}
