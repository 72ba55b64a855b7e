package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// consolidationTaint keeps other tests' pods off the consolidation tests'
// nodes.
const consolidationTaint = "tidal.dev/consolidation-test"

// consolidationGroups: a group of 8-CPU nodes at 0.50/h with two nodes,
// and a cheaper group of 4-CPU nodes at 0.19/h (fault: its launches).
func consolidationGroups(prefix, fault string) string {
	taint := fmt.Sprintf("taints: [{key: %s, effect: NoSchedule}]", consolidationTaint)
	return fmt.Sprintf("nodeGroups:\n"+
		"- {name: %[1]s-big, minSize: 0, maxSize: 4, initialSize: 2, zone: z, cpu: '8', memory: 32Gi, pricePerHour: 0.50, %[2]s}\n"+
		"- {name: %[1]s-small, minSize: 0, maxSize: 4, zone: z, cpu: '4', memory: 16Gi, pricePerHour: 0.19, provisioningDelay: 500ms, fault: %[3]q, %[2]s}\n",
		prefix, taint, fault)
}

// halfFullBigNodes runs, on the two 8-CPU nodes, one replica each of a
// workload that wants a node of its own (required anti-affinity) and one
// each of another, 2 CPU apiece: each node is half full, and no node's
// pods fit on the other, while one 4-CPU node holds one node's pods. Both
// have a PDB of minAvailable 1.
func halfFullBigNodes(t *testing.T, ns string) *testenv.PDBWatcher {
	t.Helper()
	watcher := testenv.WatchPDBs(t, cluster(t).Client, ns)
	tolerate := func(d *appsv1.Deployment) *appsv1.Deployment {
		d.Spec.Template.Spec.Tolerations = append(d.Spec.Template.Spec.Tolerations,
			corev1.Toleration{Key: consolidationTaint, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
		return d
	}
	for _, app := range []string{"web", "api"} {
		watcher.Guard(app, 1)
		createPDB(t, minAvailablePDB(ns, app, 1))
	}
	createDeployment(t, tolerate(antiAffine(deployment(ns, "web", 2, "2", "1Gi"))))
	waitRunning(t, ns, "web", 2, 30*time.Second)
	createDeployment(t, tolerate(spread(deployment(ns, "api", 2, "2", "1Gi"))))
	pods := waitRunning(t, ns, "api", 2, 30*time.Second)
	if pods[0].Spec.NodeName == pods[1].Spec.NodeName {
		t.Fatalf("the scheduler put both api pods on %s; the test needs one per node", pods[0].Spec.NodeName)
	}
	return watcher
}

var consolidationFlags = append([]string{"--consolidation-replace"}, scaleDownFlags...)

func TestConsolidationReplacesHalfFullNodesByCheaperOnes(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "cons-")
	ns := newNamespace(t)
	groups := consolidationGroups("cons", "")
	preloadNodes(t, groups)
	watcher := halfFullBigNodes(t, ns)
	drains := watchDrains(t)
	pending := watchPending(t, ns)
	tl := startTidal(t, append(consolidationFlags, "--local-node-groups="+writeGroups(t, groups))...)
	poll(t, 150*time.Second, "the 8-CPU nodes replaced by 4-CPU ones", func(ctx context.Context) (bool, error) {
		big, err := groupNodes(t, ctx, "cons-big")
		if err != nil {
			return false, err
		}
		small, err := groupNodes(t, ctx, "cons-small")
		return len(big) == 0 && len(small) == 2, err
	})
	if bad := drains.drainsBeforeReady("cons-big", "cons-small", 0); len(bad) > 0 {
		t.Fatalf("drains began before their new nodes were Ready: %v (timeline: %v)", bad, drains)
	}
	t.Logf("nodes: %v; at most %d pod(s) pending at once", drains, pending.Peak())
	small, _ := groupNodes(t, context.Background(), "cons-small")
	names := map[string]bool{}
	for _, n := range small {
		names[n.Name] = true
	}
	for _, app := range []string{"web", "api"} {
		for _, p := range waitRunning(t, ns, app, 2, 30*time.Second) {
			if !names[p.Spec.NodeName] {
				t.Fatalf("pod %s runs on %s, not on a 4-CPU node", p.Name, p.Spec.NodeName)
			}
		}
	}
	if violations, _ := watcher.Result(); len(violations) > 0 {
		t.Fatalf("%d PDB violations, first: %v", len(violations), violations[0])
	}
	// The saving is done once both replacements settled and their old
	// nodes are gone: an iteration or a few after the last old node went.
	poll(t, 30*time.Second, "the saving of both replacements done", func(ctx context.Context) (bool, error) {
		done, _ := metricValue(tl.Address, `tidal_consolidation_replacements_total{kind="single",result="done"}`)
		return done == 2, nil
	})
	drained, _ := metricValue(tl.Address, `tidal_consolidation_replacements_total{kind="single",result="drained"}`)
	saving, _ := metricValue(tl.Address, `tidal_consolidation_saving_per_hour_total{stage="done"}`)
	if drained != 2 || saving < 0.61 || saving > 0.63 {
		t.Fatalf("replacements drained %v, saving done %v/h; want 2 and 0.62", drained, saving)
	}
	events, err := eventsFor(t, context.Background(), "kube-system", "ConsolidationReplace")
	found := 0
	for _, e := range events {
		if strings.Contains(e.Message, "new node(s) of group cons-small: saving 0.3100/h") {
			found++
		}
	}
	if err != nil || found == 0 {
		t.Fatalf("ConsolidationReplace events %v (%v), want one naming the new group and the saving", events, err)
	}
	// Both replacements settled: the status shows the step with nothing
	// under way and nothing more to propose.
	poll(t, 30*time.Second, "the status's consolidation with nothing under way", func(ctx context.Context) (bool, error) {
		st, err := statusNow(ctx, t)
		if err != nil {
			return false, err
		}
		c := st.ClusterWide.Consolidation
		return c != nil && c.Status == "NoActivity" && c.Ongoing == nil && len(c.Proposed) == 0, nil
	})
}

func TestConsolidationDrainsNothingWhenTheNewNodesNeverCome(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "consf-")
	ns := newNamespace(t)
	groups := consolidationGroups("consf", "launch-failure")
	preloadNodes(t, groups)
	watcher := halfFullBigNodes(t, ns)
	before := map[string]string{}
	for _, app := range []string{"web", "api"} {
		for _, p := range waitRunning(t, ns, app, 2, 30*time.Second) {
			before[p.Name] = p.Spec.NodeName
		}
	}
	tl := startTidal(t, append(consolidationFlags, "--max-node-provision-time=3s", "--local-node-groups="+writeGroups(t, groups))...)
	poll(t, 60*time.Second, "a replacement given up", func(ctx context.Context) (bool, error) {
		v, _ := metricValue(tl.Address, `tidal_consolidation_replacements_total{kind="single",result="timed_out"}`)
		return v >= 1, nil
	})
	if v, _ := metricValue(tl.Address, `tidal_consolidation_replacements_total{kind="single",result="drained"}`); v != 0 {
		t.Fatalf("%v replacements drained, want none", v)
	}
	if v, _ := metricValue(tl.Address, `tidal_evicted_pods_total{eviction_result="succeeded"}`); v != 0 {
		t.Fatalf("%v pods evicted, want none", v)
	}
	for _, app := range []string{"web", "api"} {
		for _, p := range waitRunning(t, ns, app, 2, 5*time.Second) {
			if before[p.Name] != p.Spec.NodeName {
				t.Fatalf("pod %s moved or is new (was %v, now on %s): nothing may be drained", p.Name, before, p.Spec.NodeName)
			}
		}
	}
	big, _ := groupNodes(t, context.Background(), "consf-big")
	for _, n := range big {
		for _, taint := range n.Spec.Taints {
			if taint.Key != consolidationTaint {
				t.Fatalf("old node %s carries taint %v", n.Name, taint)
			}
		}
		if n.Spec.Unschedulable {
			t.Fatalf("old node %s is cordoned", n.Name)
		}
	}
	if violations, _ := watcher.Result(); len(violations) > 0 {
		t.Fatalf("PDB violations: %v", violations)
	}
}
