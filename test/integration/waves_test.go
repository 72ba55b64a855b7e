package integration

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// scaleDownWaves runs a group of six 4-CPU nodes with six 0.5-CPU replicas
// of one workload and web 1-CPU replicas of another, spread (six: each node
// at 1.5 CPU), under tidal with the extra flags, until scale-down has taken
// it to at most four nodes, and measures how many pods were Pending at once
// meanwhile and how many were evicted. Every evicted pod must find room on
// the nodes that stay: no scale-up runs, every replica runs at the end.
// No pod is evicted twice: a pod moved by the scale-down is never evicted
// again by it.
func scaleDownWaves(t *testing.T, prefix string, web int32, flags ...string) {
	deleteNodesOnCleanup(t, prefix+"-")
	ns := newNamespace(t)
	group := prefix + "-a"
	groups := fmt.Sprintf("nodeGroups:\n- {name: %s, minSize: 1, maxSize: 8, initialSize: 6, zone: z, cpu: '4', memory: 16Gi, provisioningDelay: 200ms}\n", group)
	preloadNodes(t, groups)
	createDeployment(t, spread(deployment(ns, "web", web, "1", "512Mi")))
	waitRunning(t, ns, "web", int(web), 60*time.Second)
	createDeployment(t, spread(deployment(ns, "api", 6, "500m", "512Mi")))
	waitRunning(t, ns, "api", 6, 60*time.Second)
	pending := watchPending(t, ns)
	tl := startTidal(t, append(append(append([]string{}, scaleDownFlags...), "--scale-down-unneeded-time=1s",
		"--local-node-groups="+writeGroups(t, groups)), flags...)...)
	poll(t, 120*time.Second, "the group down to four nodes at most", func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, group)
		return len(nodes) <= 4, err
	})
	waitRunning(t, ns, "web", int(web), 60*time.Second)
	waitRunning(t, ns, "api", 6, 60*time.Second)
	evicted, _ := metricValue(tl.Address, `tidal_evicted_pods_total{eviction_result="succeeded"}`)
	scaledUp, _ := metricValue(tl.Address, fmt.Sprintf(`tidal_scaled_up_nodes_total{node_group=%q}`, group))
	nodes, _ := groupNodes(t, context.Background(), group)
	t.Logf("flags %v: %d nodes left, %v pods evicted, %d of them evicted again after a move, at most %d pod(s) Pending at once",
		flags, len(nodes), evicted, pending.DeletedAgain(), pending.Peak())
	if scaledUp != 0 {
		t.Fatalf("%v nodes added during the scale-down: an evicted pod found no room on the nodes that stay", scaledUp)
	}
	if evicted == 0 {
		t.Fatal("no pod evicted: the scale-down drained nothing, nothing was measured")
	}
	if again := pending.DeletedAgain(); again != 0 {
		t.Fatalf("%d pod(s) evicted again after their replica had moved; want each pod evicted at most once", again)
	}
	// The pods Pending at once are a figure, not a bound. A drain starts
	// only when no pod an earlier drain moved is pending, but as tidal's
	// informer sees it: on a loaded machine the ReplicaSet controller may
	// not yet have created the replacement of the last evicted pod, or the
	// informer not yet delivered it, when the next drain starts, so the
	// pods of two drains can be pending together; and the drains of one
	// wave evict at once. A bound would hold only on an idle machine.
}

func TestScaleDownWavesFindRoomAtOnce(t *testing.T) {
	parallel(t)
	scaleDownWaves(t, "wv", 6)
}

// TestScaleDownOneDrainAtATimeFindsRoomAtOnce is the same with one drain at
// a time, as Cluster Autoscaler drains.
func TestScaleDownOneDrainAtATimeFindsRoomAtOnce(t *testing.T) {
	parallel(t)
	scaleDownWaves(t, "wv1", 6, "--max-drain-parallelism=1")
}

// TestScaleDownNeverEvictsAMovedPodAgain drains one node at a time where
// two nodes run a 0.5-CPU replica only (four web replicas): the emptiest,
// first to go, and the scheduler's least-allocated score sends the pod of
// the first drained to the second, the next to go. The DeletionCandidate
// taint, which asks the scheduler to keep evicted pods off the nodes later
// waves drain, is off (--max-bulk-soft-taint-count=0): only the hold on the
// nodes of moved pods keeps that pod from a second eviction.
func TestScaleDownNeverEvictsAMovedPodAgain(t *testing.T) {
	parallel(t)
	scaleDownWaves(t, "wvm", 4, "--max-drain-parallelism=1", "--max-bulk-soft-taint-count=0")
}
