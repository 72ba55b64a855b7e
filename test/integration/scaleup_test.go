package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/yaml"

	"github.com/tidal-autoscaler/tidal/core"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// scaleUpFlags are the flags every scale-up test runs tidal with.
var scaleUpFlags = []string{"--scan-interval=2s", "--leader-elect=false"}

// wakeOnlyFlags make tidal scan once an hour: within a test, only what
// wakes the node loop (a pod becoming unschedulable, the cloud telling of
// failed launches, new nodes ready while pods wait for them) makes it act
// after its first iteration.
var wakeOnlyFlags = []string{"--scan-interval=1h", "--max-inactivity=2h", "--max-failing-time=3h", "--leader-elect=false"}

func createDeployment(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	if _, err := cluster(t).Client.AppsV1().Deployments(d.Namespace).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment %s: %v", d.Name, err)
	}
}

func waitRunning(t *testing.T, ns, app string, want int, timeout time.Duration) []corev1.Pod {
	t.Helper()
	var running []corev1.Pod
	poll(t, timeout, fmt.Sprintf("%d %s pods Running", want, app), func(ctx context.Context) (bool, error) {
		pods, err := cluster(t).Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil {
			return false, err
		}
		running = running[:0]
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running = append(running, p)
			}
		}
		return len(running) == want, nil
	})
	return running
}

// waitCreated waits until want pods of app exist.
func waitCreated(t *testing.T, ns, app string, want int) {
	t.Helper()
	poll(t, 60*time.Second, fmt.Sprintf("%d %s pods created", want, app), func(ctx context.Context) (bool, error) {
		pods, err := cluster(t).Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		return err == nil && len(pods.Items) == want, err
	})
}

func nodeCount(t *testing.T, group string) int {
	t.Helper()
	nodes, err := groupNodes(t, context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	return len(nodes)
}

// eventsFor lists the events with reason in ns.
func eventsFor(t testing.TB, ctx context.Context, ns, reason string) ([]corev1.Event, error) {
	list, err := cluster(t).Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("reason", reason).String(),
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

func antiAffine(d *appsv1.Deployment) *appsv1.Deployment {
	d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: d.Spec.Selector.MatchLabels}, TopologyKey: corev1.LabelHostname,
		}}}}
	return d
}

func TestScaleUpZoneSelectorGrowsOnlyTheMatchingGroup(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "zs-")
	ns := newNamespace(t)
	groups := writeGroups(t, `
nodeGroups:
- {name: zs-a, minSize: 0, maxSize: 5, zone: zone-a, cpu: "4", memory: 16Gi, provisioningDelay: 200ms}
- {name: zs-b, minSize: 0, maxSize: 5, zone: zone-b, cpu: "4", memory: 16Gi, provisioningDelay: 200ms}
`)
	startTidal(t, append(scaleUpFlags, "--local-node-groups="+groups, "--expander=random")...)
	d := deployment(ns, "web", 6, "1", "1Gi")
	d.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: "zone-b"}
	createDeployment(t, d)
	for _, p := range waitRunning(t, ns, "web", 6, 60*time.Second) {
		if !strings.HasPrefix(p.Spec.NodeName, "zs-b-") {
			t.Fatalf("pod %s runs on %s, not in zone-b's group", p.Name, p.Spec.NodeName)
		}
	}
	if a, b := nodeCount(t, "zs-a"), nodeCount(t, "zs-b"); a != 0 || b != 2 {
		t.Fatalf("zs-a has %d nodes, zs-b %d: want 0 and 2 (6 pods of 1 CPU on 4-CPU nodes)", a, b)
	}
}

func TestScaleUpAntiAffinityGetsOneNodePerPodAtOnce(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "aa-")
	ns := newNamespace(t)
	groups := writeGroups(t, "nodeGroups:\n- {name: aa-g, minSize: 0, maxSize: 10, zone: z, cpu: '8', memory: 32Gi, provisioningDelay: 200ms}\n")
	// The ReplicaSet creates pods in waves; all exist before tidal starts,
	// so the decision is made for all five.
	createDeployment(t, antiAffine(deployment(ns, "db", 5, "500m", "1Gi")))
	waitCreated(t, ns, "db", 5)
	tl := startTidal(t, append(scaleUpFlags, "--local-node-groups="+groups)...)
	pods := waitRunning(t, ns, "db", 5, 60*time.Second)
	hosts := map[string]bool{}
	for _, p := range pods {
		hosts[p.Spec.NodeName] = true
	}
	if len(hosts) != 5 || nodeCount(t, "aa-g") != 5 {
		t.Fatalf("5 anti-affine pods on %d hosts, group has %d nodes: want 5 and 5", len(hosts), nodeCount(t, "aa-g"))
	}
	if n, err := metricValue(tl.Address, `tidal_scale_ups_total{node_group="aa-g"}`); err != nil || n != 1 {
		t.Fatalf("the group was grown in %v decisions (err %v), want all 5 nodes in 1", n, err)
	}
}

func TestScaleUpTaintedPoolOnlyForToleratingPods(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "tp-")
	ns := newNamespace(t)
	groups := writeGroups(t, `
nodeGroups:
- {name: tp-batch, minSize: 0, maxSize: 5, zone: z, cpu: "4", memory: 16Gi, provisioningDelay: 200ms,
   labels: {workload: batch}, taints: [{key: dedicated, value: batch, effect: NoSchedule}]}
- {name: tp-plain, minSize: 0, maxSize: 5, zone: z, cpu: "4", memory: 16Gi, provisioningDelay: 200ms}
`)
	startTidal(t, append(scaleUpFlags, "--local-node-groups="+groups, "--expander=random")...)
	createDeployment(t, deployment(ns, "web", 3, "1", "1Gi"))
	waitRunning(t, ns, "web", 3, 60*time.Second)
	if n := nodeCount(t, "tp-batch"); n != 0 {
		t.Fatalf("intolerant pods grew the tainted pool to %d nodes", n)
	}
	jobs := deployment(ns, "jobs", 3, "1", "1Gi")
	jobs.Spec.Template.Spec.NodeSelector = map[string]string{"workload": "batch"}
	jobs.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "batch", Effect: corev1.TaintEffectNoSchedule}}
	createDeployment(t, jobs)
	for _, p := range waitRunning(t, ns, "jobs", 3, 60*time.Second) {
		if !strings.HasPrefix(p.Spec.NodeName, "tp-batch-") {
			t.Fatalf("batch pod on %s", p.Spec.NodeName)
		}
	}
	pods, _ := cluster(t).Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"})
	for _, p := range pods.Items {
		if strings.HasPrefix(p.Spec.NodeName, "tp-batch-") {
			t.Fatalf("intolerant pod %s landed on the tainted pool", p.Name)
		}
	}
}

func TestScaleUpMaxSizeGivesNotTriggerScaleUp(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "mx-")
	ns := newNamespace(t)
	groups := writeGroups(t, "nodeGroups:\n- {name: mx-g, minSize: 1, maxSize: 1, zone: z, cpu: '2', memory: 8Gi}\n")
	startTidal(t, append(scaleUpFlags, "--local-node-groups="+groups)...)
	createDeployment(t, deployment(ns, "big", 3, "1500m", "1Gi"))
	waitRunning(t, ns, "big", 1, 60*time.Second)
	var msg string
	poll(t, 30*time.Second, "a NotTriggerScaleUp event naming the max size", func(ctx context.Context) (bool, error) {
		events, err := eventsFor(t, ctx, ns, "NotTriggerScaleUp")
		for _, e := range events {
			msg = e.Message
			if strings.Contains(e.Message, "pod didn't trigger scale-up: 1 max node group size reached") {
				return true, nil
			}
		}
		return false, err
	})
	if nodeCount(t, "mx-g") != 1 {
		t.Fatalf("group at max size grew; last event %q", msg)
	}
}

func setPriorities(t *testing.T, name, priorities string) {
	t.Helper()
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem},
		Data: map[string]string{"priorities": priorities}}
	_, err := cluster(t).Client.CoreV1().ConfigMaps(metav1.NamespaceSystem).Update(ctx, cm, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cluster(t).Client.CoreV1().ConfigMaps(metav1.NamespaceSystem).Create(ctx, cm, metav1.CreateOptions{})
		t.Cleanup(func() {
			_ = cluster(t).Client.CoreV1().ConfigMaps(metav1.NamespaceSystem).Delete(ctx, name, metav1.DeleteOptions{})
		})
	}
	if err != nil {
		t.Fatalf("write ConfigMap %s: %v", name, err)
	}
}

func TestScaleUpPriorityConfigMapIsReread(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "pr-")
	ns := newNamespace(t)
	groups := writeGroups(t, `
nodeGroups:
- {name: pr-x, minSize: 0, maxSize: 5, zone: z, cpu: "2", memory: 8Gi, provisioningDelay: 200ms}
- {name: pr-y, minSize: 0, maxSize: 5, zone: z, cpu: "2", memory: 8Gi, provisioningDelay: 200ms}
`)
	// Cluster Autoscaler's ConfigMap name is accepted too.
	setPriorities(t, "cluster-autoscaler-priority-expander", "50:\n  - ^pr-x$\n10:\n  - ^pr-y$\n")
	startTidal(t, append(scaleUpFlags, "--local-node-groups="+groups, "--expander=priority")...)
	createDeployment(t, antiAffine(deployment(ns, "one", 1, "1", "1Gi")))
	waitRunning(t, ns, "one", 1, 60*time.Second)
	if x, y := nodeCount(t, "pr-x"), nodeCount(t, "pr-y"); x != 1 || y != 0 {
		t.Fatalf("with pr-x preferred: pr-x %d, pr-y %d nodes", x, y)
	}
	// tidal's own ConfigMap wins over Cluster Autoscaler's.
	setPriorities(t, "tidal-priority-expander", "50:\n  - ^pr-y$\n10:\n  - ^pr-x$\n")
	time.Sleep(500 * time.Millisecond) // let the ConfigMap informer see it
	createDeployment(t, antiAffine(deployment(ns, "two", 1, "1500m", "1Gi")))
	waitRunning(t, ns, "two", 1, 60*time.Second)
	if x, y := nodeCount(t, "pr-x"), nodeCount(t, "pr-y"); x != 1 || y != 1 {
		t.Fatalf("after the edit pr-y should grow: pr-x %d, pr-y %d nodes", x, y)
	}
}

func TestScaleUpMalformedPriorityConfigMapFallsBack(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "mf-")
	ns := newNamespace(t)
	groups := writeGroups(t, `
nodeGroups:
- {name: mf-huge, minSize: 0, maxSize: 5, zone: z, cpu: "32", memory: 128Gi, provisioningDelay: 200ms}
- {name: mf-small, minSize: 0, maxSize: 5, zone: z, cpu: "2", memory: 4Gi, provisioningDelay: 200ms}
`)
	setPriorities(t, "tidal-priority-expander", "fifty:\n  - [not, a, regexp\n")
	startTidal(t, append(scaleUpFlags, "--local-node-groups="+groups, "--expander=priority,least-waste")...)
	createDeployment(t, deployment(ns, "web", 1, "1", "2Gi"))
	waitRunning(t, ns, "web", 1, 60*time.Second)
	// priority is skipped; least-waste, next in the chain, picks the small pool.
	if h, s := nodeCount(t, "mf-huge"), nodeCount(t, "mf-small"); h != 0 || s != 1 {
		t.Fatalf("fallback chose huge %d small %d, want small", h, s)
	}
	poll(t, 20*time.Second, "a PriorityConfigMapInvalid warning on the ConfigMap", func(ctx context.Context) (bool, error) {
		events, err := eventsFor(t, ctx, metav1.NamespaceSystem, "PriorityConfigMapInvalid")
		for _, e := range events {
			if e.Type == corev1.EventTypeWarning && e.InvolvedObject.Name == "tidal-priority-expander" {
				return true, nil
			}
		}
		return false, err
	})
}

// TestScaleUpFailingGroupIsBackedOffAndNextGroupUsed: the preferred group's
// launches fail for lack of capacity. The cloud tells tidal as they fail,
// and tidal backs the group off and grows the next one at once: with an
// hour between scans, nothing else would wake it, as the pods were all
// found unschedulable before it started. The pods hear of the failure.
func TestScaleUpFailingGroupIsBackedOffAndNextGroupUsed(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "fg-")
	ns := newNamespace(t)
	groups := writeGroups(t, `
nodeGroups:
- {name: fg-spot, minSize: 0, maxSize: 5, zone: z, cpu: "4", memory: 16Gi, provisioningDelay: 300ms, fault: out-of-capacity}
- {name: fg-ondemand, minSize: 0, maxSize: 5, zone: z, cpu: "4", memory: 16Gi, provisioningDelay: 300ms}
`)
	setPriorities(t, "tidal-priority-expander", "100:\n  - ^fg-spot$\n1:\n  - ^fg-ondemand$\n")
	createDeployment(t, deployment(ns, "web", 4, "1", "1Gi"))
	waitUnschedulable(t, ns, "web", 4)
	tl := startTidal(t, append(wakeOnlyFlags, "--local-node-groups="+groups, "--expander=priority")...)
	waitRunning(t, ns, "web", 4, 60*time.Second)
	if s, o := nodeCount(t, "fg-spot"), nodeCount(t, "fg-ondemand"); s != 0 || o != 1 {
		t.Fatalf("spot %d, on-demand %d nodes: want the out-of-capacity spot group skipped", s, o)
	}
	if v, err := metricValue(tl.Address, `tidal_node_group_backoff_status{node_group="fg-spot"}`); err != nil || v != 1 {
		t.Fatalf("fg-spot backoff metric %v (err %v), want 1", v, err)
	}
	st := readStatus(t)
	for _, g := range st.NodeGroups {
		if g.Name == "fg-spot" && (g.Health != "BackedOff" || !strings.Contains(g.LastFailure, "InsufficientInstanceCapacity")) {
			t.Fatalf("status of fg-spot: %+v", g)
		}
	}
	const failed = "pod triggered a scale-up of fg-spot that failed: out of resources InsufficientInstanceCapacity: node group fg-spot: no capacity of this instance type in its zone"
	poll(t, 30*time.Second, "the 4 pods told the spot group failed", func(ctx context.Context) (bool, error) {
		told, err := podsWithEvent(t, ctx, ns, "FailedScaleUp")
		for name, msg := range told {
			if msg != failed {
				t.Fatalf("pod %s: %q, want %q", name, msg, failed)
			}
		}
		return len(told) == 4, err
	})
}

// waitUnschedulable waits until want pods of app exist and the scheduler
// found no node for any of them.
func waitUnschedulable(t *testing.T, ns, app string, want int) {
	t.Helper()
	waitSelectedUnschedulable(t, ns, "app="+app, want)
}

// waitSelectedUnschedulable waits until want pods of ns match selector
// ("" for all) and the scheduler found no node for any of them.
func waitSelectedUnschedulable(t testing.TB, ns, selector string, want int) {
	t.Helper()
	testenv.Poll(t, 2*time.Minute, fmt.Sprintf("%d pods %q unschedulable", want, selector), func(ctx context.Context) (bool, error) {
		pods, err := cluster(t).Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		n := 0
		for i := range pods.Items {
			if core.IsUnschedulable(&pods.Items[i]) {
				n++
			}
		}
		return n == want && len(pods.Items) == want, nil
	})
}

func readStatus(t *testing.T) core.Status {
	t.Helper()
	var st core.Status
	poll(t, 10*time.Second, "the status ConfigMap", func(ctx context.Context) (bool, error) {
		var err error
		st, err = statusNow(ctx, t)
		return err == nil, err
	})
	return st
}

// statusNow reads the status ConfigMap once: inside a poll, whose own
// deadline then covers a tidal slow to write its first status.
func statusNow(ctx context.Context, t *testing.T) (core.Status, error) {
	var st core.Status
	cm, err := cluster(t).Client.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, "tidal-status", metav1.GetOptions{})
	if err != nil {
		return st, err
	}
	return st, yaml.Unmarshal([]byte(cm.Data["status"]), &st)
}

// A burst of pods is decided as soon as they become unschedulable, not at
// the next scan (an hour away here), and gets exactly the nodes it needs.
// How soon, and that a burst that keeps coming is one decision, is the
// node loop's settle window (TestDebounceSettlesABurstWithinItsLimit); the
// ReplicaSet creates the pods in waves, which a busy machine may spread over
// more than one decision, so this test counts nodes, not decisions.
func TestScaleUpBurstIsDecidedWithoutWaitingForAScan(t *testing.T) {
	parallel(t)
	deleteNodesOnCleanup(t, "bu-")
	ns := newNamespace(t)
	groups := writeGroups(t, "nodeGroups:\n- {name: bu-g, minSize: 0, maxSize: 20, zone: z, cpu: '8', memory: 32Gi, provisioningDelay: 200ms}\n")
	tl := startTidal(t, append(wakeOnlyFlags, "--local-node-groups="+groups)...)
	poll(t, 30*time.Second, "tidal's first iteration, at start", func(context.Context) (bool, error) {
		n, err := iterationCount(tl)
		return n >= 1, err
	})
	createDeployment(t, deployment(ns, "burst", 200, "150m", "256Mi"))
	poll(t, 60*time.Second, "a scale-up decision", func(context.Context) (bool, error) {
		n, err := metricValue(tl.Address, `tidal_scale_ups_total{node_group="bu-g"}`)
		return n > 0, err
	})
	waitRunning(t, ns, "burst", 200, 120*time.Second)
	// 200 pods of 150m: 30 CPU on 8-CPU nodes: 4 nodes.
	if n := nodeCount(t, "bu-g"); n != 4 {
		t.Fatalf("%d nodes for the burst, want 4", n)
	}
}
