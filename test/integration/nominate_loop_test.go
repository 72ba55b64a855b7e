package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// nominationStartupTaint holds the planned nodes of the nomination tests:
// they register, as a real node does, some time before they can take pods.
const nominationStartupTaint = "startup-taint.cluster-autoscaler.kubernetes.io/nominate-test"

// nominationGroups is a group of 4-CPU nodes that register behind
// nominationStartupTaint.
func nominationGroups(t *testing.T, name string) string {
	t.Helper()
	deleteNodesOnCleanup(t, name+"-")
	return writeGroups(t, fmt.Sprintf(`
nodeGroups:
- {name: %s, minSize: 0, maxSize: 5, zone: zone-a, cpu: "4", memory: 16Gi, provisioningDelay: 200ms, taints: [{key: %q, value: "true", effect: NoSchedule}]}
`, name, nominationStartupTaint))
}

// mixedPods makes the pods whose plan the scheduler's default scoring
// does not follow when the nodes come one by one: 2 pods of 1.5 CPU that
// become unschedulable first (so the scheduler tries them first), then 2 of
// 2.5 CPU. The plan needs 2 nodes of 4 CPU, each with a pod of each size;
// the scheduler alone puts both small pods on the first node that can take
// them, and one big pod is then left without room.
func mixedPods(t *testing.T, ns string) {
	t.Helper()
	createDeployment(t, deployment(ns, "small", 2, "1500m", "256Mi"))
	waitUnschedulable(t, ns, "small", 2)
	createDeployment(t, deployment(ns, "big", 2, "2500m", "256Mi"))
	waitUnschedulable(t, ns, "big", 2)
}

// nominations maps the names of ns's pods to their nominated node, ""
// for a pod not nominated; bound pods are left out.
func nominations(ctx context.Context, t testing.TB, ns string) (map[string]string, error) {
	pods, err := cluster(t).Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" && p.DeletionTimestamp == nil {
			out[p.Name] = p.Status.NominatedNodeName
		}
	}
	return out, nil
}

// waitNominated waits until every pending pod of ns (want of them) is
// nominated to a node of prefix, and returns the nominations.
func waitNominated(t *testing.T, ns, prefix string, want int) map[string]string {
	t.Helper()
	var got map[string]string
	poll(t, 60*time.Second, fmt.Sprintf("%d pending pods nominated to nodes %s*", want, prefix), func(ctx context.Context) (bool, error) {
		var err error
		got, err = nominations(ctx, t, ns)
		if err != nil || len(got) != want {
			return false, err
		}
		for _, node := range got {
			if !strings.HasPrefix(node, prefix) {
				return false, nil
			}
		}
		return true, nil
	})
	return got
}

// releaseNodes takes the startup taint off the group's nodes one by one,
// each once the pods that can go to the one before are bound.
func releaseNodes(t *testing.T, ns, group string) {
	t.Helper()
	nodes, err := groupNodes(t, context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	for i := range nodes {
		if !hasTaintKey(&nodes[i], nominationStartupTaint) {
			continue
		}
		removeTaint(t, nodes[i].Name, nominationStartupTaint)
		poll(t, 30*time.Second, "pods bound to "+nodes[i].Name, func(ctx context.Context) (bool, error) {
			pods, err := cluster(t).Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			bound := 0
			for _, p := range pods.Items {
				if p.Spec.NodeName == nodes[i].Name {
					bound++
				}
			}
			return bound > 0, err
		})
		time.Sleep(time.Second)
	}
}

// podNodes maps the names of ns's pods to their node.
func podNodes(t *testing.T, ns string) map[string]string {
	t.Helper()
	pods, err := cluster(t).Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		out[p.Name] = p.Spec.NodeName
	}
	return out
}

// TestNominatedPodsBindToTheirPlannedNodes: the planned nodes register
// (behind a startup taint, as a real node registers NotReady), tidal
// nominates the pods waiting for them to the nodes its plan put them on,
// and as the nodes can take pods, one by one, the real kube-scheduler
// binds each pod to the node it was nominated to: 2 nodes, none asked for
// again, where the scheduler alone fills the first node with the small
// pods and needs a third node (measured with --nominate-planned-pods=false).
func TestNominatedPodsBindToTheirPlannedNodes(t *testing.T) {
	parallel(t)
	groups := nominationGroups(t, "nb")
	ns := newNamespace(t)
	testenv.DumpOnFailure(t, cluster(t).Client, ns, "nb-")
	mixedPods(t, ns)
	tl := startTidal(t, append(scaleUpFlags, "--local-node-groups="+groups, "--nominate-planned-pods=true")...)

	nominated := waitNominated(t, ns, "nb-", 4)
	byNode := map[string][]string{}
	for pod, node := range nominated {
		byNode[node] = append(byNode[node], pod)
	}
	for node, pods := range byNode {
		if len(byNode) != 2 || len(pods) != 2 || strings.HasPrefix(pods[0], "big") == strings.HasPrefix(pods[1], "big") {
			t.Fatalf("node %s has pods %v nominated, want 2 nodes each with a big and a small pod: %v", node, pods, nominated)
		}
	}
	releaseNodes(t, ns, "nb")
	waitRunning(t, ns, "small", 2, 60*time.Second)
	waitRunning(t, ns, "big", 2, 60*time.Second)
	bound := podNodes(t, ns)
	for pod, node := range nominated {
		if bound[pod] != node {
			t.Errorf("pod %s bound to %s, nominated to %s", pod, bound[pod], node)
		}
	}
	requested, err := metricValue(tl.Address, `tidal_scaled_up_nodes_total{node_group="nb"}`)
	if err != nil {
		t.Fatal(err)
	}
	if n := nodeCount(t, "nb"); n != 2 || requested != 2 {
		t.Fatalf("group nb has %d nodes, %v were requested: want 2 and 2", n, requested)
	}
}
