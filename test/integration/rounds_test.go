package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// TestScaleUpRoundsFillTheirOwnNewNodes: 8 pods of 1.5 CPU spread over
// three zones (maxSkew 1, minDomains 3: zones without a node count as
// empty) on 4-CPU nodes, with no node yet. A zone's new node first takes
// one pod (the other zones have none); its second pod fits only once the
// other zones have theirs. One decision must plan 5 nodes
// (zones 2/2/1 for 3/3/2 pods), each with pods, not a new node per round.
// The nodes start behind a startup taint so that the decision is complete
// before the scheduler places anything; tainted nodes still count as spread
// domains, so taking the taints off one by one cannot skew the placement.
func TestScaleUpRoundsFillTheirOwnNewNodes(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "sp-")
	const key = "startup-taint.cluster-autoscaler.kubernetes.io/setup"
	groups := writeGroups(t, fmt.Sprintf(`
nodeGroups:
- {name: sp-a, minSize: 0, maxSize: 6, zone: zone-a, cpu: "4", memory: 16Gi, provisioningDelay: 200ms, taints: [{key: %[1]q, value: "true", effect: NoSchedule}]}
- {name: sp-b, minSize: 0, maxSize: 6, zone: zone-b, cpu: "4", memory: 16Gi, provisioningDelay: 200ms, taints: [{key: %[1]q, value: "true", effect: NoSchedule}]}
- {name: sp-c, minSize: 0, maxSize: 6, zone: zone-c, cpu: "4", memory: 16Gi, provisioningDelay: 200ms, taints: [{key: %[1]q, value: "true", effect: NoSchedule}]}
`, key))
	ns := newNamespace(t)
	testenv.DumpOnFailure(t, cluster(t).Client, ns, "sp-")
	d := deployment(ns, "web", 8, "1500m", "1Gi")
	d.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, MinDomains: ptr.To[int32](3),
		LabelSelector: &metav1.LabelSelector{MatchLabels: d.Spec.Selector.MatchLabels},
	}}
	createDeployment(t, d)
	waitUnschedulable(t, ns, "web", 8)
	tl := startTidal(t, append(wakeOnlyFlags, "--local-node-groups="+groups, "--expander=least-waste")...)

	poll(t, 60*time.Second, "8 web pods Running", func(ctx context.Context) (bool, error) {
		for _, g := range []string{"sp-a", "sp-b", "sp-c"} {
			nodes, err := groupNodes(t, ctx, g)
			if err != nil {
				return false, err
			}
			for i := range nodes {
				if hasTaintKey(&nodes[i], key) {
					removeTaint(t, nodes[i].Name, key)
				}
			}
		}
		pods, err := cluster(t).Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == 8, err
	})
	var sizes []int
	requested := 0.0
	for _, g := range []string{"sp-a", "sp-b", "sp-c"} {
		sizes = append(sizes, nodeCount(t, g))
		n, err := metricValue(tl.Address, fmt.Sprintf(`tidal_scaled_up_nodes_total{node_group=%q}`, g))
		if err != nil {
			t.Fatalf("read tidal_scaled_up_nodes_total of %s: %v", g, err)
		}
		requested += n
	}
	slices.Sort(sizes)
	if !slices.Equal(sizes, []int{1, 2, 2}) || requested != 5 {
		t.Fatalf("groups have %v nodes (sorted), %v were requested: want 1, 2 and 2, 5 requested (3/3/2 pods per zone, 2 per node)",
			sizes, requested)
	}
	assertNoEmptyNode(t, ns, "web", "sp-")
}

// assertNoEmptyNode fails when a node of the prefix runs no pod of app.
func assertNoEmptyNode(t *testing.T, ns, app, prefix string) {
	t.Helper()
	pods, err := cluster(t).Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]int{}
	for _, p := range pods.Items {
		used[p.Spec.NodeName]++
	}
	nodes, err := cluster(t).Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if len(n.Name) >= len(prefix) && n.Name[:len(prefix)] == prefix && used[n.Name] == 0 {
			t.Errorf("node %s runs no %s pod (pods per node: %v)", n.Name, app, used)
		}
	}
}
