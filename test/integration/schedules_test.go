package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/config"
	"github.com/tidal-autoscaler/tidal/core"
	"github.com/tidal-autoscaler/tidal/core/nodeschedule"
)

// dailyAt is a cron expression for every day at t's minute, in UTC.
func dailyAt(t time.Time) string {
	t = t.UTC()
	return fmt.Sprintf("%d %d * * *", t.Minute(), t.Hour())
}

// applySchedules creates or replaces tidal's schedules ConfigMap in
// kube-system (tidal's namespace), and deletes it when the test ends.
func applySchedules(t *testing.T, data map[string]string) {
	t.Helper()
	ctx := context.Background()
	cms := cluster(t).Client.CoreV1().ConfigMaps("kube-system")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: nodeschedule.ConfigMapName}, Data: data}
	_, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		t.Cleanup(func() {
			if err := cms.Delete(context.Background(), cm.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete ConfigMap %s: %v", cm.Name, err)
			}
		})
	}
	if err != nil {
		t.Fatalf("apply ConfigMap %s: %v", cm.Name, err)
	}
}

// readyNodes polls until group has want Ready nodes and no other.
func readyNodes(t *testing.T, group string, want int, timeout time.Duration) {
	t.Helper()
	poll(t, timeout, fmt.Sprintf("exactly %d Ready nodes in %s", want, group), func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, group)
		if err != nil {
			return false, err
		}
		ready := 0
		for i := range nodes {
			if isReady(&nodes[i]) {
				ready++
			}
		}
		return ready == want && len(nodes) == want, nil
	})
}

func TestScheduledNodeGroupMinimum(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "sch-")
	groups := writeGroups(t, `
nodeGroups:
- {name: sch-a, minSize: 0, maxSize: 5, zone: z, cpu: "4", memory: 16Gi, provisioningDelay: 200ms}
`)
	// A window that opened an hour ago and lasts two: it was already open
	// when tidal started, and applies at its first iteration. The second
	// entry names no node group tidal knows: reported, and ignored.
	now := time.Now()
	entries := func(start string) string {
		return fmt.Sprintf(`
- {name: office-hours, nodeGroup: sch-a, start: %q, duration: 2h, minSize: 2}
- {name: broken, nodeGroup: sch-nowhere, start: "0 8 * * *", duration: 1h, minSize: 3}
`, start)
	}
	applySchedules(t, map[string]string{nodeschedule.SchedulesKey: entries(dailyAt(now.Add(-time.Hour)))})
	tl := startTidal(t, append(scaleDownFlags, "--local-node-groups="+groups)...)

	readyNodes(t, "sch-a", 2, 60*time.Second)
	if v, err := metricValue(tl.Address, `tidal_node_group_scheduled_min_size{node_group="sch-a"}`); err != nil || v != 2 {
		t.Errorf("tidal_node_group_scheduled_min_size of sch-a = %v (%v), want 2", v, err)
	}
	poll(t, 30*time.Second, "a ScheduleInvalid event on the ConfigMap naming the broken entry", func(ctx context.Context) (bool, error) {
		events, err := eventsFor(t, ctx, "kube-system", "ScheduleInvalid")
		for _, e := range events {
			if e.InvolvedObject.Name == nodeschedule.ConfigMapName && strings.Contains(e.Message, `schedules "broken": nodeGroup: "sch-nowhere"`) {
				return true, nil
			}
		}
		return false, err
	})
	poll(t, 30*time.Second, "the status naming the broken entry and sch-a's scheduled minimum", func(ctx context.Context) (bool, error) {
		cm, err := cluster(t).Client.CoreV1().ConfigMaps("kube-system").Get(ctx, config.DefaultScaleUpOptions().StatusConfigMapName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := cm.Data[core.StatusConfigMapKey]
		return strings.Contains(s, "scheduleProblems:") && strings.Contains(s, "sch-nowhere") &&
			strings.Contains(s, "scheduled: min 2 (office-hours)"), nil
	})
	// The scheduled minimum, not the cloud's (0), keeps the empty nodes
	// from scale-down while the window is open.
	poll(t, 30*time.Second, "sch-a's nodes unremovable at the group's minimum size", func(ctx context.Context) (bool, error) {
		v, err := metricValue(tl.Address, `tidal_unremovable_nodes_count{reason="NodeGroupMinSizeReached"}`)
		return err == nil && v == 2, nil
	})
	if n := nodeCount(t, "sch-a"); n != 2 {
		t.Fatalf("sch-a has %d nodes while its scheduled minimum is 2", n)
	}

	// The window moved six hours ahead: closed. Normal scale-down takes
	// the empty nodes back.
	applySchedules(t, map[string]string{nodeschedule.SchedulesKey: entries(dailyAt(now.Add(6 * time.Hour)))})
	readyNodes(t, "sch-a", 0, 60*time.Second)
}

func TestAllocationTriggerAddsNodeWithoutPendingPods(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "alt-")
	ns := newNamespace(t)
	groups := `
nodeGroups:
- {name: alt-a, minSize: 0, maxSize: 5, initialSize: 1, zone: z, cpu: "4", memory: 16Gi, provisioningDelay: 200ms}
`
	preloadNodes(t, groups)
	// Three of the node's four cores requested: 75 % of the group's CPU.
	createDeployment(t, deployment(ns, "busy", 3, "1", "1Gi"))
	waitRunning(t, ns, "busy", 3, 30*time.Second)
	applySchedules(t, map[string]string{nodeschedule.TriggersKey: `
- name: spare-cpu
  nodeGroup: alt-a
  scope: nodeGroup
  resource: cpu
  threshold: 60
  for: 2s
  cooldown: 1h
  add: 1
`})
	// Scale-down would take the new empty node back at once; here it
	// waits longer than the test.
	tl := startTidal(t, "--scan-interval=1s", "--leader-elect=false", "--scale-down-unneeded-time=10m",
		"--local-node-groups="+writeGroups(t, groups))

	readyNodes(t, "alt-a", 2, 60*time.Second)
	if v, err := metricValue(tl.Address, `tidal_allocation_trigger_scale_ups_total{node_group="alt-a",rule="spare-cpu"}`); err != nil || v != 1 {
		t.Errorf("tidal_allocation_trigger_scale_ups_total = %v (%v), want 1", v, err)
	}
	pods, err := cluster(t).Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" {
			t.Errorf("pod %s pending: the trigger was to add a node without any", p.Name)
		}
	}
}
