package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
	"github.com/tidal-autoscaler/tidal/core/act"
	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
	"github.com/tidal-autoscaler/tidal/core/telemetry"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// actuatorTaint keeps other tests' pods off the actuator tests' nodes.
const actuatorTaint = "tidal.dev/actuator-test"

// actuatorEnv is an actuator's dependencies over the real API server and
// the local cloud: a node group of its own, the namespace's pod informer,
// events into a recorder the test reads.
type actuatorEnv struct {
	ctx    context.Context
	ns     string
	group  cloudprovider.NodeGroup
	events *record.FakeRecorder
	deps   act.Deps
}

func newActuatorEnv(t *testing.T, group string, initial int) *actuatorEnv {
	t.Helper()
	deleteNodesOnCleanup(t, group+"-")
	ns := newNamespace(t)
	testenv.DumpOnFailure(t, cluster(t).Client, ns, group+"-")
	ctx := testenv.LogOnFailure(context.Background(), t, testenv.LogVerbosity)
	cfg := cloudConfig(group, 0, 5, 100*time.Millisecond)
	cfg.NodeGroups[0].InitialSize = ptr.To(initial)
	cfg.NodeGroups[0].Taints = []corev1.Taint{{Key: actuatorTaint, Effect: corev1.TaintEffectNoSchedule}}
	// The cloud's own context: the tests' contexts end the calls they
	// bound, not the cloud.
	cloudCtx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	cloud, err := local.New(cluster(t).Client, cfg)
	if err != nil {
		t.Fatalf("new cloud: %v", err)
	}
	if err := cloud.Start(cloudCtx); err != nil {
		t.Fatalf("start cloud: %v", err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cluster(t).Client, 0, informers.WithNamespace(ns))
	pods := factory.Core().V1().Pods()
	podsSynced := pods.Informer().HasSynced
	factory.Start(cloudCtx.Done())
	// Shutdown waits for the informers, which stop with cloudCtx.
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	if !cache.WaitForCacheSync(cloudCtx.Done(), podsSynced) {
		t.Fatal("pod informer did not sync")
	}
	events := record.NewFakeRecorder(1000)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("events recorded:\n%s", drainEvents(events))
		}
	})
	return &actuatorEnv{ctx: ctx, ns: ns, group: cloud.NodeGroups()[0], events: events, deps: act.Deps{
		Client: cluster(t).Client, Pods: pods.Lister(), PodsSynced: podsSynced,
		Events: telemetry.NewEvents(events, clock.RealClock{}, true, nil),
		Status: statusConfigMap{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tidal-status"}}},
		Clock:  clock.RealClock{}, Metrics: telemetry.NewMetrics(prometheus.NewRegistry(), true),
		Options: act.Options{NodeDeleteDelayAfterTaint: 100 * time.Millisecond, MaxPodEvictionTime: time.Second,
			MaxGracefulTerminationSec: 10, MaxBulkSoftTaintCount: 10, MaxBulkSoftTaintTime: 3 * time.Second},
	}}
}

// statusConfigMap is the status ConfigMap the events of the groups go on.
type statusConfigMap struct{ cm *corev1.ConfigMap }

func (s statusConfigMap) Object() *corev1.ConfigMap { return s.cm }

// drainEvents returns the events recorded so far, one a line.
func drainEvents(r *record.FakeRecorder) string {
	var b strings.Builder
	for {
		select {
		case e := <-r.Events:
			b.WriteString("  " + e + "\n")
		default:
			return b.String()
		}
	}
}

// readyNodes waits until the group has n Ready nodes that the scheduler
// places pods on and returns them. The node lifecycle controller takes the
// not-ready taint off a node some time after it turns Ready.
func (e *actuatorEnv) readyNodes(t *testing.T, n int) []*corev1.Node {
	t.Helper()
	var out []*corev1.Node
	poll(t, 30*time.Second, fmt.Sprintf("%d Ready, untainted nodes in group %s", n, e.group.Id()), func(ctx context.Context) (bool, error) {
		nodes, err := groupNodes(t, ctx, e.group.Id())
		out = out[:0]
		for i := range nodes {
			if isReady(&nodes[i]) && !hasTaintKey(&nodes[i], corev1.TaintNodeNotReady) {
				out = append(out, &nodes[i])
			}
		}
		return len(out) == n, err
	})
	return out
}

// node reads a node from the API server.
func (e *actuatorEnv) node(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n, err := cluster(t).Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get node %s: %v", name, err)
	}
	return n
}

// guardedPod creates a Running, Ready pod labelled app=guarded on node
// (the simulated kubelet runs it) and waits for it to be Ready.
func (e *actuatorEnv) guardedPod(t *testing.T, name, node string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name, Labels: map[string]string{"app": "guarded"}},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: ptr.To[int64](0),
			Tolerations: []corev1.Toleration{{Key: actuatorTaint, Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
	}
	if _, err := cluster(t).Client.CoreV1().Pods(e.ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	var got *corev1.Pod
	poll(t, 30*time.Second, "pod "+name+" Ready", func(ctx context.Context) (bool, error) {
		var err error
		got, err = cluster(t).Client.CoreV1().Pods(e.ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && podReady(got), err
	})
	return got
}

// guard creates the PDB of the app=guarded pods and waits until the
// disruption controller has counted them.
func (e *actuatorEnv) guard(t *testing.T, minAvailable, allowed int) {
	t.Helper()
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "guarded"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(int32(minAvailable))),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}},
	}
	pdbs := cluster(t).Client.PolicyV1().PodDisruptionBudgets(e.ns)
	cur, err := pdbs.Get(context.Background(), pdb.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = pdbs.Create(context.Background(), pdb, metav1.CreateOptions{})
	case err == nil:
		cur.Spec = pdb.Spec
		_, err = pdbs.Update(context.Background(), cur, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatalf("write PDB: %v", err)
	}
	poll(t, 30*time.Second, fmt.Sprintf("PDB to allow %d disruption(s)", allowed), func(ctx context.Context) (bool, error) {
		got, err := pdbs.Get(ctx, pdb.Name, metav1.GetOptions{})
		return err == nil && got.Status.ObservedGeneration == got.Generation && got.Status.DisruptionsAllowed == int32(allowed) &&
			got.Status.CurrentHealthy == 2, err
	})
}

// TestLiveActuatorWritesToTheCluster drives every write of the live
// actuator against the API server and the local cloud: Grow raises the
// group's target and nodes come; SoftTaint writes the DeletionCandidate
// taint and takes it off; CleanUpTaints takes off a ToBeDeleted taint no
// removal owns; Remove taints a node, evicts its pod through the Eviction
// API (a PDB that allows no disruption stops it, and the node stays,
// untainted) and deletes the node from the cloud.
func TestLiveActuatorWritesToTheCluster(t *testing.T) {
	parallel(t)
	e := newActuatorEnv(t, "actlive", 0)
	a := act.NewLive(e.deps)
	t.Cleanup(a.Wait)

	res := a.Grow(e.ctx, act.Growth{Group: e.group, Up: scaleup.ScaleUp{Group: e.group.Id(), From: 0, To: 2, Max: 5}})
	if res.Refused != nil || res.Grown != 2 {
		t.Fatalf("Grow: %+v, want 2 nodes accepted", res)
	}
	if target, err := e.group.TargetSize(); err != nil || target != 2 {
		t.Fatalf("target size %d (%v) after Grow, want 2", target, err)
	}
	nodes := e.readyNodes(t, 2)
	n1, n2 := nodes[0].Name, nodes[1].Name

	// Soft taints: on, then off.
	since := time.Now().Add(-time.Minute).Truncate(time.Second)
	st := a.SoftTaint(e.ctx, act.SoftTaints{Add: []string{n1}, Since: map[string]time.Time{n1: since}})
	if st.Written != 1 || len(st.Failed) != 0 {
		t.Fatalf("SoftTaint add: %+v", st)
	}
	got := taintOf(e.node(t, n1), scaledown.DeletionCandidateTaint)
	if got == nil || got.Effect != corev1.TaintEffectPreferNoSchedule || got.Value != fmt.Sprint(since.Unix()) {
		t.Fatalf("node %s: DeletionCandidate taint %+v, want PreferNoSchedule with value %d", n1, got, since.Unix())
	}
	if st := a.SoftTaint(e.ctx, act.SoftTaints{Remove: []string{n1}}); st.Written != 1 || len(st.Failed) != 0 {
		t.Fatalf("SoftTaint remove: %+v", st)
	}
	if got := taintOf(e.node(t, n1), scaledown.DeletionCandidateTaint); got != nil {
		t.Fatalf("node %s still has %+v after the soft taint was removed", n1, got)
	}

	// A ToBeDeleted taint left by a removal that was interrupted comes
	// off; a node without one is not written.
	updateNode(t, n2, func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: scaledown.ToBeDeletedTaint, Value: "1700000000", Effect: corev1.TaintEffectNoSchedule})
	})
	clean1 := e.node(t, n1)
	if err := a.CleanUpTaints(e.ctx, []*corev1.Node{clean1, e.node(t, n2)}); err != nil {
		t.Fatalf("CleanUpTaints: %v", err)
	}
	if got := taintOf(e.node(t, n2), scaledown.ToBeDeletedTaint); got != nil {
		t.Fatalf("node %s still has the stale %+v", n2, got)
	}
	if after := e.node(t, n1); !equality.Semantic.DeepEqual(after.Spec, clean1.Spec) {
		t.Fatalf("CleanUpTaints changed node %s, which had no deletion taint: %+v", n1, after.Spec)
	}

	// Remove: a PDB that allows no disruption keeps the pod, and so the
	// node; once it allows one, the pod is evicted and the node goes.
	pod := e.guardedPod(t, "guarded-1", n1)
	e.guardedPod(t, "guarded-2", n2)
	e.guard(t, 2, 0)
	removal := act.Removal{Name: n1, Node: e.node(t, n1), Group: e.group, Pods: []*corev1.Pod{pod}, Kind: "underutilized"}
	if started := a.Remove(e.ctx, []act.Removal{removal}); len(started) != 1 {
		t.Fatalf("Remove started %v", started)
	}
	a.Wait()
	if r := a.Removing(); r.LastFailure.IsZero() || !r.LastDelete.IsZero() || r.All != 0 {
		t.Fatalf("removal against a PDB allowing no disruption: %+v, want it failed", r)
	}
	if _, err := cluster(t).Client.CoreV1().Pods(e.ns).Get(context.Background(), pod.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("pod %s after a refused eviction: %v", pod.Name, err)
	}
	n := e.node(t, n1)
	if taintOf(n, scaledown.ToBeDeletedTaint) != nil || n.DeletionTimestamp != nil {
		t.Fatalf("node %s after a failed removal: taints %v, deleting %v; want it untainted and kept", n1, n.Spec.Taints, n.DeletionTimestamp)
	}
	if target, _ := e.group.TargetSize(); target != 2 {
		t.Fatalf("target size %d after a failed removal, want 2", target)
	}

	e.guard(t, 1, 1)
	removal.Node = n
	a.Remove(e.ctx, []act.Removal{removal})
	a.Wait()
	if r := a.Removing(); r.LastDelete.IsZero() {
		t.Fatalf("removal with the PDB allowing one disruption did not succeed: %+v", r)
	}
	if _, err := cluster(t).Client.CoreV1().Pods(e.ns).Get(context.Background(), pod.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("pod %s after the removal: %v, want it evicted", pod.Name, err)
	}
	if target, _ := e.group.TargetSize(); target != 1 {
		t.Fatalf("target size %d after the removal, want 1", target)
	}
	instances, err := e.group.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range instances {
		if in.Id == n.Spec.ProviderID {
			t.Fatalf("instance %s of the removed node is still in the cloud: %+v", in.Id, instances)
		}
	}
	if events := drainEvents(e.events); !strings.Contains(events, "ScaleDown removed underutilized node "+n1) {
		t.Errorf("no ScaleDown event on the status for %s among:\n%s", n1, events)
	}
	poll(t, 30*time.Second, "node "+n1+" gone", func(ctx context.Context) (bool, error) {
		_, err := cluster(t).Client.CoreV1().Nodes().Get(ctx, n1, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// instanceOf returns the cloud instance of node n.
func instanceOf(t *testing.T, instances []cloudprovider.Instance, n *corev1.Node) cloudprovider.Instance {
	t.Helper()
	for _, in := range instances {
		if in.Id == n.Spec.ProviderID {
			return in
		}
	}
	t.Fatalf("node %s (%s) is no instance of the group: %+v", n.Name, n.Spec.ProviderID, instances)
	return cloudprovider.Instance{}
}

// taintOf returns the node's taint with key, or nil.
func taintOf(n *corev1.Node, key string) *corev1.Taint {
	for i := range n.Spec.Taints {
		if n.Spec.Taints[i].Key == key {
			return &n.Spec.Taints[i]
		}
	}
	return nil
}

// TestDryRunActuatorWritesNothing gives the dry-run actuator every kind of
// write over a real group, nodes and pods, and watches them: no node or pod
// changes (but the simulated kubelet's node status), the group's target and
// instances stay, and the decisions are recorded as events.
func TestDryRunActuatorWritesNothing(t *testing.T) {
	parallel(t)
	e := newActuatorEnv(t, "actdry", 2)
	nodes := e.readyNodes(t, 2)
	n1, n2 := nodes[0].Name, nodes[1].Name
	updateNode(t, n2, func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: scaledown.ToBeDeletedTaint, Value: "1700000000", Effect: corev1.TaintEffectNoSchedule})
	})
	pod := e.guardedPod(t, "guarded-1", n1)
	e.guardedPod(t, "guarded-2", n2)
	e.guard(t, 1, 1)
	before := map[string]*corev1.Node{n1: e.node(t, n1), n2: e.node(t, n2)}
	instances, err := e.group.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	changes := watchWrites(t, e)

	a := act.NewDryRun(e.deps)
	a.Begin(e.ctx)
	if res := a.Grow(e.ctx, act.Growth{Group: e.group, Up: scaleup.ScaleUp{Group: e.group.Id(), From: 2, To: 4, Max: 5}}); res.Grown != 0 || res.Refused != nil {
		t.Errorf("dry-run Grow: %+v, want nothing grown and nothing refused", res)
	}
	if st := a.SoftTaint(e.ctx, act.SoftTaints{Add: []string{n1}, Remove: []string{n2}, Since: map[string]time.Time{n1: time.Now()}}); st.Written != 0 {
		t.Errorf("dry-run SoftTaint wrote %d", st.Written)
	}
	if err := a.CleanUpTaints(e.ctx, []*corev1.Node{before[n2]}); err != nil {
		t.Errorf("dry-run CleanUpTaints: %v", err)
	}
	if started := a.Remove(e.ctx, []act.Removal{{Name: n1, Node: before[n1], Group: e.group, Pods: []*corev1.Pod{pod}, Kind: "underutilized"}}); len(started) != 0 {
		t.Errorf("dry-run Remove started %v", started)
	}
	late := instanceOf(t, instances, before[n2])
	if res := a.Cancel(e.ctx, act.Cancel{Group: e.group, Nodes: []*corev1.Node{before[n2]}, Cancel: clusterstate.Cancel{
		Group: e.group.Id(), Instances: []cloudprovider.Instance{late}, Registered: []string{late.Id}, Reason: "ProvisionTimeout"}}); res.Sizes != nil {
		t.Errorf("dry-run Cancel read the sizes again: %+v", res)
	}
	a.Wait()
	a.End(true, map[string]int{e.group.Id(): 2})

	for _, msg := range changes(t) {
		t.Error(msg)
	}
	for name, b := range before {
		n := e.node(t, name)
		if !equality.Semantic.DeepEqual(n.Spec, b.Spec) || !equality.Semantic.DeepEqual(n.Annotations, b.Annotations) {
			t.Errorf("node %s changed: spec %+v, annotations %v; before: spec %+v, annotations %v", name, n.Spec, n.Annotations, b.Spec, b.Annotations)
		}
	}
	if target, err := e.group.TargetSize(); err != nil || target != 2 {
		t.Errorf("target size %d (%v) after the dry run, want 2", target, err)
	}
	if after, err := e.group.Nodes(); err != nil || len(after) != len(instances) {
		t.Errorf("instances after the dry run: %+v (%v), before: %+v", after, err, instances)
	}
	if s := a.Standing(); len(s) != 3 {
		t.Errorf("dry-run decisions standing %v, want the scale-up, the removal and the cancel", s)
	}
	events := drainEvents(e.events)
	for _, want := range []string{"ScaledUpGroup would scale up node group actdry: size 2 -> 4 (max: 5)", "ScaleDown node would be removed by tidal (underutilized), evicting 1 pod(s)"} {
		if !strings.Contains(events, want) {
			t.Errorf("no event %q among:\n%s", want, events)
		}
	}
}

// watchWrites watches the test's pods and its group's nodes from now on.
// The function it returns waits until the pod watch has seen a write made
// after the actuator's calls, and returns every change seen: any pod event
// but that write's, any node change but to its status (which the simulated
// kubelet writes).
func watchWrites(t *testing.T, e *actuatorEnv) func(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	pods := cluster(t).Client.CoreV1().Pods(e.ns)
	podList, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	podWatch, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: podList.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	sel := local.NodeGroupLabel + "=" + e.group.Id()
	nodeList, err := cluster(t).Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	nodeWatch, err := cluster(t).Client.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: nodeList.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]*corev1.Node{}
	for i := range nodeList.Items {
		last[nodeList.Items[i].Name] = &nodeList.Items[i]
	}
	return func(t *testing.T) []string {
		t.Helper()
		// A pod written after the calls: once the pod watch delivers it,
		// it has delivered every pod event before it. Node events, from
		// another watch, get a second more.
		marker := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "after-the-calls"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
		if _, err := pods.Create(ctx, marker, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var out []string
		timeout, grace := time.After(30*time.Second), (<-chan time.Time)(nil)
		for {
			select {
			case ev, ok := <-podWatch.ResultChan():
				if !ok {
					return append(out, "the pod watch ended early")
				}
				p, isPod := ev.Object.(*corev1.Pod)
				switch {
				case !isPod:
				case p.Name == marker.Name:
					if grace == nil {
						grace = time.After(time.Second)
					}
				default:
					out = append(out, fmt.Sprintf("pod %s: %s event (resourceVersion %s)", p.Name, ev.Type, p.ResourceVersion))
				}
			case ev, ok := <-nodeWatch.ResultChan():
				if !ok {
					return append(out, "the node watch ended early")
				}
				out = append(out, nodeChange(ev, last)...)
			case <-grace:
				return out
			case <-timeout:
				return append(out, "the pod watch did not deliver the marker pod within 30s")
			}
		}
	}
}

// nodeChange describes a node event that is more than a status write.
func nodeChange(ev watch.Event, last map[string]*corev1.Node) []string {
	n, ok := ev.Object.(*corev1.Node)
	if !ok {
		return nil
	}
	prev := last[n.Name]
	last[n.Name] = n
	switch {
	case ev.Type != watch.Modified || prev == nil:
		return []string{fmt.Sprintf("node %s: %s event", n.Name, ev.Type)}
	case !equality.Semantic.DeepEqual(prev.Spec, n.Spec), !equality.Semantic.DeepEqual(prev.Labels, n.Labels),
		!equality.Semantic.DeepEqual(prev.Annotations, n.Annotations), n.DeletionTimestamp != nil:
		return []string{fmt.Sprintf("node %s changed: spec %+v, annotations %v", n.Name, n.Spec, n.Annotations)}
	}
	return nil
}
