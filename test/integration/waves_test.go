package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/core"
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
	scaleDownWavesRestarted(t, prefix, web, false, flags...)
}

// scaleDownWavesRestarted is scaleDownWaves; with restart, tidal is
// stopped once the first node is gone, and another started in its place,
// which must read back the evictions of the scale-down under way from the
// status ConfigMap.
func scaleDownWavesRestarted(t *testing.T, prefix string, web int32, restart bool, flags ...string) {
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
	args := append(append(append([]string{}, scaleDownFlags...), "--scale-down-unneeded-time=1s",
		"--local-node-groups="+writeGroups(t, groups)), flags...)
	tl := startTidal(t, args...)
	if restart {
		tl = restartAfterFirstRemoval(t, tl, group, args)
	}
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
	// The pods Pending at once are a figure, not a bound. A drain evicts
	// its next pod only once the replacement of the last evicted one is
	// bound (--max-pending-evicted-pods=1), but as tidal's informer sees
	// it, and this test watches the pods through another watch, which
	// may see the binding later; without pacing the drains of one wave
	// evict at once, and how many of their pods are seen pending follows
	// how fast the scheduler is on the loaded machine.
}

// restartAfterFirstRemoval stops tidal once the group has lost a node,
// checks that the status ConfigMap keeps the scale-down's evictions, and
// starts another tidal.
func restartAfterFirstRemoval(t *testing.T, tl *tidal, group string, args []string) *tidal {
	poll(t, 120*time.Second, "the first node removed", func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, group)
		return len(nodes) <= 5, err
	})
	if err := tl.Stop(t); err != nil {
		t.Fatalf("stop tidal: %v", err)
	}
	cm, err := cluster(t).Client.CoreV1().ConfigMaps("kube-system").Get(context.Background(), "tidal-status", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read the status ConfigMap: %v", err)
	}
	if kept := cm.Data[core.EvictionsConfigMapKey]; !strings.Contains(kept, "controller") {
		t.Fatalf("the status ConfigMap keeps %q under %s after a removal, want its evictions", kept, core.EvictionsConfigMapKey)
	}
	return startTidal(t, args...)
}

func TestScaleDownWavesFindRoomAtOnce(t *testing.T) {
	parallel(t)
	scaleDownWaves(t, "wv", 6)
}

// TestScaleDownUnpacedWavesFindRoomAtOnce is the same with the drains'
// evictions not paced: each drain evicts all its pods at once, as before
// --max-pending-evicted-pods, for the figures beside the paced ones.
func TestScaleDownUnpacedWavesFindRoomAtOnce(t *testing.T) {
	parallel(t)
	scaleDownWaves(t, "wvu", 6, "--max-pending-evicted-pods=0")
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

// TestRestartedTidalNeverEvictsAMovedPodAgain is the same with tidal
// restarted once the first node is gone: the tidal that takes over reads
// the evictions back from the status ConfigMap and holds the node where
// the first drain's pod went, as the first would have.
func TestRestartedTidalNeverEvictsAMovedPodAgain(t *testing.T) {
	parallel(t)
	scaleDownWavesRestarted(t, "wvr", 4, true, "--max-drain-parallelism=1", "--max-bulk-soft-taint-count=0")
}
