package integration

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/benchgen"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// TestStoredFormIsWhatTheAPIServerStores checks benchgen's stored form
// against what the real API server stores: a pending pod and a running pod
// of S1, created as their ReplicaSet's controller creates them (so the
// API server defaults and admits them: ServiceAccount, DefaultToleration-
// Seconds, Priority), the pending one then tried by the scheduler (no node
// fits: there is none), the running one given its kubelet's status; and
// their ReplicaSets. Everything must be equal but what is random or
// depends on the time and the cluster: UIDs, resource versions, times, the
// token volume's suffix, the scheduler's message.
func TestStoredFormIsWhatTheAPIServerStores(t *testing.T) {
	parallel(t)
	ctx := context.Background()
	ns := testenv.NewNamespace(t, benchCluster(t).Client)
	t.Cleanup(func() { deletePodsNow(t, ns) })
	want := benchgen.Generate(benchgen.S1())
	if err := want.Store(benchgen.StoreOptions{}); err != nil {
		t.Fatal(err)
	}
	raw := benchgen.Generate(benchgen.S1())
	for _, objs := range [][]*corev1.Pod{raw.RunningPods[:1], raw.PendingPods[:1]} {
		objs[0].Namespace = ns
	}
	for _, rs := range raw.ReplicaSets {
		rs.Namespace = ns
	}
	l, err := newLoader(benchCluster(t).Config, raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.waitServiceAccount(ctx, ns); err != nil {
		t.Fatalf("no default ServiceAccount in %s: %v", ns, err)
	}
	for i := range raw.ReplicaSets {
		if err := l.replicaSet(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.runningPod(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := l.pendingPod(ctx, 0); err != nil {
		t.Fatal(err)
	}
	pending := waitBenchUnschedulable(t, ns, raw.PendingPods[0].Name)
	running, err := benchCluster(t).Client.CoreV1().Pods(ns).Get(ctx, raw.RunningPods[0].Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The loader creates running pods bound (the real path binds them
	// later, which records no managed fields): only their status's fields
	// compare.
	comparePod(t, running, want.RunningPods[0], "status")
	comparePod(t, pending, want.PendingPods[0], "", "status")
	rs, err := benchCluster(t).Client.AppsV1().ReplicaSets(ns).Get(ctx, want.ReplicaSets[0].Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	compareReplicaSet(t, rs, want.ReplicaSets[0])
}

// waitUnschedulable waits for the scheduler to find pod ns/name
// unschedulable and returns it.
func waitBenchUnschedulable(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	testenv.Poll(t, time.Minute, "the scheduler to try "+name, func(ctx context.Context) (bool, error) {
		var err error
		pod, err = benchCluster(t).Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && unschedulable(pod), err
	})
	return pod
}

// comparePod compares the pod the API server stores with the stored form,
// and the managed fields of the updates of the given subresources ("" the
// pod itself). Managers are not compared: localcluster's components are
// named after the test binary, a real cluster's after themselves.
func comparePod(t *testing.T, got, want *corev1.Pod, subresources ...string) {
	t.Helper()
	want = want.DeepCopy()
	// What is random or the cluster's own.
	want.ObjectMeta.Namespace, want.UID, want.ResourceVersion = got.Namespace, got.UID, got.ResourceVersion
	want.CreationTimestamp = got.CreationTimestamp
	oldOwner, newOwner := want.OwnerReferences[0].UID, got.OwnerReferences[0].UID
	want.OwnerReferences[0].UID = newOwner
	renameTokenVolume(want, tokenVolume(t, got))
	sameTimes(&got.Status, &want.Status)
	for i := range want.Status.ContainerStatuses {
		want.Status.ContainerStatuses[i].ContainerID = got.Status.ContainerStatuses[i].ContainerID
	}
	if unschedulable(got) { // the scheduler's message is about this cluster's nodes
		want.Status.Conditions[0].Message = got.Status.Conditions[0].Message
	}
	for _, sub := range subresources {
		g, w := managedFields(got, sub), managedFields(want, sub)
		if g == nil || w == nil {
			t.Errorf("%s: managed fields of the %q subresource: got %v, want %v", got.Name, sub, g != nil, w != nil)
			continue
		}
		wraw := bytes.ReplaceAll(w.FieldsV1.GetRawBytes(), []byte(oldOwner), []byte(newOwner))
		if g.APIVersion != w.APIVersion || !bytes.Equal(g.FieldsV1.GetRawBytes(), wraw) {
			t.Errorf("%s: managed fields of the %q subresource (by %s):\n%s %s\nwant (by %s)\n%s %s", got.Name, sub,
				g.Manager, g.APIVersion, g.FieldsV1.GetRawString(), w.Manager, w.APIVersion, wraw)
		}
	}
	got = got.DeepCopy()
	got.ManagedFields, want.ManagedFields = nil, nil
	if !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("%s as the API server stores it (+) and in benchgen's stored form (-):\n%s", got.Name, diff.Diff(want, got))
	}
}

// compareReplicaSet compares a ReplicaSet's spec and metadata with the
// stored form (its status is the ReplicaSet controller's, not running here).
func compareReplicaSet(t *testing.T, got, want *appsv1.ReplicaSet) {
	t.Helper()
	w := want.DeepCopy()
	w.Namespace, w.UID, w.ResourceVersion, w.CreationTimestamp = got.Namespace, got.UID, got.ResourceVersion, got.CreationTimestamp
	w.ManagedFields, w.Status = got.ManagedFields, got.Status
	if !apiequality.Semantic.DeepEqual(got, w) {
		t.Errorf("ReplicaSet %s as the API server stores it (+) and in benchgen's stored form (-):\n%s", got.Name, diff.Diff(w, got))
	}
	if g, w := managedFields(got, ""), managedFields(want, ""); g == nil || !bytes.Equal(g.FieldsV1.GetRawBytes(), w.FieldsV1.GetRawBytes()) {
		t.Errorf("ReplicaSet %s: managed fields of its creation %v, want %s", got.Name, g, w.FieldsV1.GetRawString())
	}
}

// tokenVolume is the name of the pod's ServiceAccount token volume.
func tokenVolume(t *testing.T, p *corev1.Pod) string {
	t.Helper()
	for _, v := range p.Spec.Volumes {
		if strings.HasPrefix(v.Name, benchgen.ServiceAccountVolumePrefix) {
			return v.Name
		}
	}
	t.Fatalf("%s has no ServiceAccount token volume: %+v", p.Name, p.Spec.Volumes)
	return ""
}

// renameTokenVolume gives the pod's token volume, its mounts and their
// statuses the name name.
func renameTokenVolume(p *corev1.Pod, name string) {
	for i := range p.Spec.Volumes {
		if strings.HasPrefix(p.Spec.Volumes[i].Name, benchgen.ServiceAccountVolumePrefix) {
			p.Spec.Volumes[i].Name = name
		}
	}
	for i := range p.Spec.Containers {
		for k := range p.Spec.Containers[i].VolumeMounts {
			p.Spec.Containers[i].VolumeMounts[k].Name = name
		}
	}
	for i := range p.Status.ContainerStatuses {
		for k := range p.Status.ContainerStatuses[i].VolumeMounts {
			p.Status.ContainerStatuses[i].VolumeMounts[k].Name = name
		}
	}
}

// sameTimes copies got's times into want.
func sameTimes(got, want *corev1.PodStatus) {
	want.StartTime = got.StartTime
	for i := range want.Conditions {
		if i < len(got.Conditions) {
			want.Conditions[i].LastTransitionTime = got.Conditions[i].LastTransitionTime
			want.Conditions[i].LastProbeTime = got.Conditions[i].LastProbeTime
		}
	}
	for i := range want.ContainerStatuses {
		if i < len(got.ContainerStatuses) && want.ContainerStatuses[i].State.Running != nil && got.ContainerStatuses[i].State.Running != nil {
			want.ContainerStatuses[i].State.Running.StartedAt = got.ContainerStatuses[i].State.Running.StartedAt
		}
	}
}

// managedFields is the first entry of an update of the subresource ("" the
// object itself), or nil.
func managedFields(obj metav1.Object, subresource string) *metav1.ManagedFieldsEntry {
	for _, e := range obj.GetManagedFields() {
		if e.Subresource == subresource {
			return &e
		}
	}
	return nil
}

// deletePodsNow deletes the pods of ns at once: no kubelet runs the pod
// bound to a node that does not exist, and none would confirm its end.
func deletePodsNow(t *testing.T, ns string) {
	err := benchCluster(t).Client.CoreV1().Pods(ns).DeleteCollection(context.Background(),
		metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
	if err != nil {
		t.Errorf("delete the pods of %s: %v", ns, err)
	}
}
