package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/core"
)

// unschedulableReasons are the reasons of tidal_unschedulable_pods_count.
var unschedulableReasons = []string{"scale_up_triggered", "fits_existing_or_upcoming", "no_node_group_fits", "expendable",
	"too_young", "unsupported", "skipped_for_time"}

// podsWithEvent maps the names of the pods of ns with an event of reason
// to the event's message.
func podsWithEvent(t testing.TB, ctx context.Context, ns, reason string) (map[string]string, error) {
	events, err := eventsFor(t, ctx, ns, reason)
	out := map[string]string{}
	for _, e := range events {
		if e.InvolvedObject.Kind == "Pod" {
			out[e.InvolvedObject.Name] = e.Message
		}
	}
	return out, err
}

// groupStatus finds a node group in tidal's status ConfigMap.
func groupStatus(st core.Status, name string) (core.NodeGroupStatus, bool) {
	i := slices.IndexFunc(st.NodeGroups, func(g core.NodeGroupStatus) bool { return g.Name == name })
	if i < 0 {
		return core.NodeGroupStatus{}, false
	}
	return st.NodeGroups[i], true
}

// TestScaleUpTellsOnlyThePodsLeftWithoutANode: 4 identical pods of 3 CPU
// pinned to zone-a, whose group of 4-CPU nodes may grow by 2 (nodes that
// take an hour to come, so the picture holds still): 2 pods get the 2
// nodes, 2 never can. The 2 are told why, and only they: the events, the
// status ConfigMap and the metric count 2 refused of 4 pending, not the
// whole equivalence group.
func TestScaleUpTellsOnlyThePodsLeftWithoutANode(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "nt-")
	ns := newNamespace(t)
	groups := writeGroups(t, `
nodeGroups:
- {name: nt-a, minSize: 0, maxSize: 2, zone: zone-a, cpu: "4", memory: 16Gi, provisioningDelay: 1h}
- {name: nt-b, minSize: 0, maxSize: 5, zone: zone-b, cpu: "4", memory: 16Gi, provisioningDelay: 200ms}
`)
	d := deployment(ns, "web", 4, "3", "1Gi")
	d.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: "zone-a"}
	createDeployment(t, d)
	// All exist before tidal starts, so one decision sees the 4.
	waitCreated(t, ns, "web", 4)
	tl := startTidal(t, append(scaleUpFlags, "--local-node-groups="+groups)...)

	// From the second decision on, 2 pods wait for the requested nodes.
	poll(t, 60*time.Second, "2 pods counted as waiting for the requested nodes", func(context.Context) (bool, error) {
		n, err := metricValue(tl.Address, `tidal_unschedulable_pods_count{reason="fits_existing_or_upcoming"}`)
		return n == 2, err
	})
	counts := map[string]float64{}
	sum := 0.0
	for _, reason := range unschedulableReasons {
		v, err := metricValue(tl.Address, fmt.Sprintf(`tidal_unschedulable_pods_count{reason=%q}`, reason))
		if err != nil {
			t.Fatal(err)
		}
		counts[reason], sum = v, sum+v
	}
	if counts["no_node_group_fits"] != 2 || sum != 4 {
		t.Fatalf("tidal_unschedulable_pods_count %v: %v pods in all, want 4, of which 2 no_node_group_fits", counts, sum)
	}

	var triggered, refused map[string]string
	poll(t, 30*time.Second, "every pod told what became of it", func(ctx context.Context) (bool, error) {
		var err error
		if triggered, err = podsWithEvent(t, ctx, ns, "TriggeredScaleUp"); err != nil {
			return false, err
		}
		refused, err = podsWithEvent(t, ctx, ns, "NotTriggerScaleUp")
		told := map[string]bool{}
		for name := range triggered {
			told[name] = true
		}
		for name := range refused {
			told[name] = true
		}
		return len(told) == 4, err
	})
	const why = "pod didn't trigger scale-up: 1 max node group size reached, 1 node(s) didn't match Pod's node affinity/selector"
	for name := range triggered {
		if msg, ok := refused[name]; ok {
			t.Fatalf("pod %s triggered the scale-up and was told it did not: %q", name, msg)
		}
	}
	if len(triggered) != 2 || len(refused) != 2 {
		t.Fatalf("%d pods triggered the scale-up, %d were refused: want 2 and 2", len(triggered), len(refused))
	}
	for name, msg := range refused {
		if msg != why {
			t.Fatalf("pod %s: %q, want %q", name, msg, why)
		}
	}

	var st core.Status
	poll(t, 30*time.Second, "the status ConfigMap of this run", func(ctx context.Context) (bool, error) {
		var err error
		if st, err = statusNow(ctx, t); err != nil {
			return false, err
		}
		g, ok := groupStatus(st, "nt-a")
		return ok && g.Target == 2 && len(st.ClusterWide.ScaleUp.NoScaleUp) > 0, nil
	})
	s := st.ClusterWide.ScaleUp.NoScaleUp
	if name, ok := strings.CutPrefix(s[0].Example, ns+"/"); len(s) != 1 || s[0].Pods != 2 || !ok || refused[name] == "" {
		t.Fatalf("status noScaleUp %+v: want 2 pods, for example one of those refused %v", s, refused)
	}
	if g, _ := groupStatus(st, "nt-b"); g.Target != 0 || nodeCount(t, "nt-a") != 0 || nodeCount(t, "nt-b") != 0 {
		t.Fatalf("nt-b target %d; nt-a %d nodes, nt-b %d: want nt-a's 2 nodes requested and not yet come, nt-b untouched",
			g.Target, nodeCount(t, "nt-a"), nodeCount(t, "nt-b"))
	}
}

// TestScaleUpNamesTheResourceAPodLacks: a pod asking for 100 CPU, which no
// group's nodes have, is told so in the scheduler's words.
func TestScaleUpNamesTheResourceAPodLacks(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "cpu-")
	ns := newNamespace(t)
	groups := writeGroups(t, `
nodeGroups:
- {name: cpu-small, minSize: 0, maxSize: 5, zone: zone-a, cpu: "4", memory: 16Gi}
- {name: cpu-large, minSize: 0, maxSize: 5, zone: zone-a, cpu: "16", memory: 64Gi}
- {name: cpu-huge, minSize: 0, maxSize: 5, zone: zone-b, cpu: "64", memory: 256Gi}
`)
	startTidal(t, append(scaleUpFlags, "--local-node-groups="+groups)...)
	createDeployment(t, deployment(ns, "big", 1, "100", "1Gi"))
	const want = "pod didn't trigger scale-up: 3 Insufficient cpu"
	var got map[string]string
	poll(t, 60*time.Second, "a NotTriggerScaleUp event on the pod", func(ctx context.Context) (bool, error) {
		var err error
		got, err = podsWithEvent(t, ctx, ns, "NotTriggerScaleUp")
		return len(got) > 0, err
	})
	for name, msg := range got {
		if msg != want {
			t.Fatalf("pod %s: %q, want %q", name, msg, want)
		}
	}
	for _, g := range []string{"cpu-small", "cpu-large", "cpu-huge"} {
		if n := nodeCount(t, g); n != 0 {
			t.Fatalf("%s has %d nodes, want 0", g, n)
		}
	}
	pods, err := cluster(t).Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 1 || pods.Items[0].Spec.NodeName != "" {
		t.Fatalf("the 100-CPU pod: %d pods (err %v), want one, pending", len(pods.Items), err)
	}
}
