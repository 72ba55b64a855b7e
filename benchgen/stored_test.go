package benchgen

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"
)

// stored returns S1 in its stored form.
func stored(t *testing.T) *Cluster {
	t.Helper()
	c := Generate(S1())
	if err := c.Store(StoreOptions{}); err != nil {
		t.Fatal(err)
	}
	return c
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestStoredPodIsAdmitted checks a running and a pending pod against what
// the API server, its admission plugins, the kubelet and the scheduler
// write (TestStoredFormIsWhatTheAPIServerStores in test/integration checks
// the same against a real API server).
func TestStoredPodIsAdmitted(t *testing.T) {
	c := stored(t)
	for _, p := range []*corev1.Pod{c.RunningPods[0], c.PendingPods[0]} {
		s := p.Spec
		ctr := s.Containers[0]
		if ctr.Image != PauseImage || ctr.ImagePullPolicy != corev1.PullIfNotPresent || ctr.TerminationMessagePath == "" ||
			s.RestartPolicy != corev1.RestartPolicyAlways || s.DNSPolicy != corev1.DNSClusterFirst ||
			s.SchedulerName != corev1.DefaultSchedulerName || s.TerminationGracePeriodSeconds == nil || s.EnableServiceLinks == nil {
			t.Errorf("%s: not defaulted: %+v", p.Name, s)
		}
		if s.ServiceAccountName != "default" || ptr.Deref(s.Priority, -1) != 0 ||
			ptr.Deref(s.PreemptionPolicy, "") != corev1.PreemptLowerPriority {
			t.Errorf("%s: service account %q, priority %v, preemption %v", p.Name, s.ServiceAccountName, s.Priority, s.PreemptionPolicy)
		}
		checkTokenVolume(t, p)
		checkDefaultTolerations(t, p)
		if !uuidRE.MatchString(string(p.UID)) || p.ResourceVersion == "" || p.Generation != 1 {
			t.Errorf("%s: uid %q, resourceVersion %q, generation %d", p.Name, p.UID, p.ResourceVersion, p.Generation)
		}
		if p.Status.QOSClass != corev1.PodQOSBurstable {
			t.Errorf("%s: QoS class %q", p.Name, p.Status.QOSClass)
		}
	}
	run, pend := c.RunningPods[0], c.PendingPods[0]
	if run.Status.Phase != corev1.PodRunning || len(run.Status.Conditions) != 5 || run.Status.PodIP != PodIP(0, 0) ||
		run.Status.HostIP != NodeIP(0) || len(run.Status.ContainerStatuses) != 1 || !run.Status.ContainerStatuses[0].Ready {
		t.Errorf("running pod status: %+v", run.Status)
	}
	if c := pend.Status.Conditions; pend.Status.Phase != corev1.PodPending || len(c) != 1 ||
		c[0].Reason != corev1.PodReasonUnschedulable || !strings.HasPrefix(c[0].Message, "0/100 nodes are available") {
		t.Errorf("pending pod status: %+v", pend.Status)
	}
	checkManagers(t, run, "kube-controller-manager", "kubelet/status")
	checkManagers(t, pend, "kube-controller-manager", "kube-scheduler/status")
}

// checkTokenVolume checks the ServiceAccount plugin's volume and mount.
func checkTokenVolume(t *testing.T, p *corev1.Pod) {
	t.Helper()
	v := p.Spec.Volumes
	name, _ := strings.CutPrefix(v[0].Name, ServiceAccountVolumePrefix)
	if len(v) != 1 || len(name) != 5 || strings.Trim(name, nameAlphabet) != "" || v[0].Projected == nil ||
		len(v[0].Projected.Sources) != 3 || *v[0].Projected.Sources[0].ServiceAccountToken.ExpirationSeconds != 3607 {
		t.Errorf("%s: volumes %+v", p.Name, v)
	}
	m := p.Spec.Containers[0].VolumeMounts
	if len(m) != 1 || m[0].Name != v[0].Name || !m[0].ReadOnly || m[0].MountPath != "/var/run/secrets/kubernetes.io/serviceaccount" {
		t.Errorf("%s: mounts %+v", p.Name, m)
	}
}

// checkDefaultTolerations checks the DefaultTolerationSeconds plugin's
// tolerations, after the pod's own.
func checkDefaultTolerations(t *testing.T, p *corev1.Pod) {
	t.Helper()
	tol := p.Spec.Tolerations
	if len(tol) < 2 {
		t.Fatalf("%s: tolerations %+v", p.Name, tol)
	}
	for i, key := range []string{"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"} {
		got := tol[len(tol)-2+i]
		want := corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute,
			TolerationSeconds: ptr.To[int64](300)}
		if !apiequality.Semantic.DeepEqual(got, want) {
			t.Errorf("%s: toleration %+v, want %+v", p.Name, got, want)
		}
	}
}

// checkManagers checks the managers (and subresources) of the managed
// fields entries of obj, in order.
func checkManagers(t *testing.T, obj metav1.Object, want ...string) {
	t.Helper()
	var got []string
	for _, e := range obj.GetManagedFields() {
		m := e.Manager
		if e.Subresource != "" {
			m += "/" + e.Subresource
		}
		if e.FieldsV1 == nil || len(e.FieldsV1.GetRawBytes()) < 20 || e.Operation != metav1.ManagedFieldsOperationUpdate {
			t.Errorf("%s: entry of %s: %+v", obj.GetName(), m, e)
		}
		got = append(got, m)
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: managers %v, want %v", obj.GetName(), got, want)
	}
}

// TestStoreKeepsTheGeneratedCluster checks that storing changes nothing
// the generator decided: names, labels, requests, placement, owners (by
// name, their UIDs following the ReplicaSets').
func TestStoreKeepsTheGeneratedCluster(t *testing.T) {
	raw, c := Generate(S1()), stored(t)
	for i, p := range c.RunningPods {
		r := raw.RunningPods[i]
		if p.Name != r.Name || p.Spec.NodeName != r.Spec.NodeName || !apiequality.Semantic.DeepEqual(p.Labels, r.Labels) ||
			!apiequality.Semantic.DeepEqual(p.Spec.Containers[0].Resources, r.Spec.Containers[0].Resources) ||
			p.OwnerReferences[0].Name != r.OwnerReferences[0].Name {
			t.Fatalf("stored %s differs from generated %s", p.Name, r.Name)
		}
	}
	rsUID := map[string]types.UID{}
	for _, rs := range c.ReplicaSets {
		rsUID[rs.Name] = rs.UID
	}
	for _, p := range append(slices.Clone(c.RunningPods), c.PendingPods...) {
		if ref := p.OwnerReferences[0]; ref.UID != rsUID[ref.Name] || ref.UID == "" {
			t.Fatalf("%s: owner %s has UID %q, the ReplicaSet %q", p.Name, ref.Name, ref.UID, rsUID[ref.Name])
		}
	}
	for j, n := range c.Nodes {
		r := raw.Nodes[j]
		if n.Name != r.Name || !apiequality.Semantic.DeepEqual(n.Labels, r.Labels) ||
			!apiequality.Semantic.DeepEqual(n.Spec.Taints, r.Spec.Taints) ||
			!apiequality.Semantic.DeepEqual(n.Status.Allocatable, r.Status.Allocatable) {
			t.Fatalf("stored %s differs from generated %s", n.Name, r.Name)
		}
		checkManagers(t, n, "kubelet", "kube-controller-manager", "kubelet/status")
	}
}

// TestStoredObjectsAreDistinct checks what makes real objects differ from
// each other: UIDs, resource versions and the token volumes' random names
// (every pending pod of a ReplicaSet has a volume of its own name).
func TestStoredObjectsAreDistinct(t *testing.T) {
	c := stored(t)
	uids, versions, volumes := map[types.UID]bool{}, map[string]bool{}, map[string]bool{}
	objects := []metav1.Object{}
	for _, n := range c.Nodes {
		objects = append(objects, n)
	}
	for _, rs := range c.ReplicaSets {
		objects = append(objects, rs)
	}
	for _, p := range append(slices.Clone(c.RunningPods), c.PendingPods...) {
		objects = append(objects, p)
		volumes[p.Spec.Volumes[0].Name] = true
	}
	for _, o := range objects {
		uids[o.GetUID()] = true
		versions[o.GetResourceVersion()] = true
	}
	if len(uids) != len(objects) || len(versions) != len(objects) {
		t.Errorf("%d objects have %d UIDs and %d resource versions", len(objects), len(uids), len(versions))
	}
	if pods := len(c.RunningPods) + len(c.PendingPods); len(volumes) < pods*99/100 {
		t.Errorf("%d pods have only %d token volume names", pods, len(volumes))
	}
}

// TestStoreIsReproducible checks that two stores of a cluster are equal.
func TestStoreIsReproducible(t *testing.T) {
	a, b := stored(t), stored(t)
	if !apiequality.Semantic.DeepEqual(a.PendingPods, b.PendingPods) || !apiequality.Semantic.DeepEqual(a.RunningPods, b.RunningPods) ||
		!apiequality.Semantic.DeepEqual(a.Nodes, b.Nodes) {
		t.Errorf("two stores differ: %s", diff.Diff(a.RunningPods[0], b.RunningPods[0]))
	}
}

// TestManagedFieldsAsTheFieldManagerWrites checks the shapes Store copies
// against the field manager run on every object of a small cluster: the
// same bytes, the pods' own IPs in the kubelet's fields.
func TestManagedFieldsAsTheFieldManagerWrites(t *testing.T) {
	p := S1()
	p.N, p.P = 20, 60
	c, each := Generate(p), Generate(p)
	if err := c.Store(StoreOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err := newStorer(each, StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.fields.uncached = true
	if err := s.run(); err != nil {
		t.Fatal(err)
	}
	objects := func(c *Cluster) []metav1.Object {
		var out []metav1.Object
		for _, n := range c.Nodes {
			out = append(out, n)
		}
		for _, p := range append(slices.Clone(c.RunningPods), c.PendingPods...) {
			out = append(out, p)
		}
		return out
	}
	want := objects(each)
	for i, o := range objects(c) {
		for k, e := range o.GetManagedFields() {
			if w := want[i].GetManagedFields()[k]; !bytes.Equal(e.FieldsV1.GetRawBytes(), w.FieldsV1.GetRawBytes()) {
				t.Fatalf("%s: entry %d of %s is\n%s\nwant\n%s", o.GetName(), k, e.Manager, e.FieldsV1.GetRawString(), w.FieldsV1.GetRawString())
			}
		}
	}
	if p := c.RunningPods[1]; !strings.Contains(string(p.ManagedFields[1].FieldsV1.GetRawBytes()), p.Status.PodIP) {
		t.Errorf("%s: kubelet fields do not name pod IP %s", p.Name, p.Status.PodIP)
	}
}

// TestStoreTransformsEveryObject checks that the transform sees every
// object once, in its stored form, that the cluster keeps what it returns,
// and that its errors are reported.
func TestStoreTransformsEveryObject(t *testing.T) {
	c := Generate(S1())
	seen := 0
	err := c.Store(StoreOptions{Transform: func(obj any) (any, error) {
		seen++
		if o, ok := obj.(metav1.Object); !ok || o.GetResourceVersion() == "" || len(o.GetManagedFields()) == 0 {
			t.Fatalf("transform got %T before it was stored", obj)
		}
		obj.(metav1.Object).SetManagedFields(nil)
		return obj, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if want := len(c.Nodes) + len(c.ReplicaSets) + len(c.RunningPods) + len(c.PendingPods); seen != want {
		t.Errorf("transform saw %d objects, want %d", seen, want)
	}
	if c.RunningPods[7].ManagedFields != nil || c.Nodes[3].ManagedFields != nil {
		t.Error("the cluster does not hold the transformed objects")
	}
	errBoom := errors.New("boom")
	err = Generate(S1()).Store(StoreOptions{Transform: func(any) (any, error) { return nil, errBoom }})
	if !errors.Is(err, errBoom) || !strings.Contains(err.Error(), "node-00000") {
		t.Errorf("Store with a failing transform = %v, want the error naming the object", err)
	}
	err = Generate(S1()).Store(StoreOptions{Transform: func(any) (any, error) { return "x", nil }})
	if err == nil || !strings.Contains(err.Error(), "returned a string") {
		t.Errorf("Store with a transform returning another type = %v", err)
	}
}

func TestListerOrder(t *testing.T) {
	items := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	r := rngForTest()
	a, b := ListerOrder(r, items), ListerOrder(r, items)
	if slices.Equal(a, b) || slices.Equal(a, items) {
		t.Errorf("orders %v and %v of %v: want two new orders", a, b, items)
	}
	slices.Sort(a)
	if !slices.Equal(a, items) || !slices.IsSorted(items) {
		t.Errorf("order %v is not a permutation of %v (left unchanged)", a, items)
	}
}

func rngForTest() *rand.Rand { return rand.New(rand.NewPCG(7, 7)) }
