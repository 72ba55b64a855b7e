package benchgen

import (
	"bytes"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
)

// Field managers: the names the API server records, from the components'
// user agents.
const (
	managerControllers = "kube-controller-manager"
	managerKubelet     = "kubelet"
	managerScheduler   = "kube-scheduler"
)

// placeholderIP stands for a pod's IP in the kubelet's managed fields of
// the first running pod (an address of TEST-NET-1, in no generated
// cluster); the others get a copy with their own IP.
const placeholderIP = "192.0.2.1"

// fieldManagers compute managed fields with the API server's own field
// manager (k8s.io/apimachinery/pkg/util/managedfields, fed the typed
// schema client-go carries). The fields an update owns depend on the
// object's shape, not its values, except where a list is keyed by value
// (a pod's IPs): a shape is computed once and copied, so that storing
// 500,000 pods takes seconds. Every object gets its own copy of the bytes,
// as every object decoded from the API server has.
type fieldManagers struct {
	pod, podStatus, node, nodeStatus, rs, rsStatus *managedfields.FieldManager
	shapes                                         map[string][][]byte
	// uncached computes every object's fields (for tests).
	uncached bool
}

func newFieldManagers() (*fieldManagers, error) {
	tc := applyconfigurations.NewTypeConverter(scheme.Scheme)
	f := &fieldManagers{shapes: map[string][][]byte{}}
	for _, m := range []struct {
		fm          **managedfields.FieldManager
		gvk         schema.GroupVersionKind
		subresource string
	}{
		{&f.pod, corev1.SchemeGroupVersion.WithKind("Pod"), ""},
		{&f.podStatus, corev1.SchemeGroupVersion.WithKind("Pod"), "status"},
		{&f.node, corev1.SchemeGroupVersion.WithKind("Node"), ""},
		{&f.nodeStatus, corev1.SchemeGroupVersion.WithKind("Node"), "status"},
		{&f.rs, rsGVK, ""},
		{&f.rsStatus, rsGVK, "status"},
	} {
		fm, err := managedfields.NewDefaultFieldManager(tc, scheme.Scheme, scheme.Scheme, scheme.Scheme,
			m.gvk, m.gvk.GroupVersion(), m.subresource, nil)
		if err != nil {
			return nil, fmt.Errorf("field manager for %s %s: %w", m.gvk.Kind, m.subresource, err)
		}
		*m.fm = fm
	}
	return f, nil
}

var rsGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: rsKind}

// owned returns the fields manager owns after updating live to updated
// with fm: the FieldsV1 of its entry (on the status subresource when
// status is set, as fm must then be).
func owned(fm *managedfields.FieldManager, live, updated runtime.Object, manager string, status bool) ([]byte, error) {
	out, err := fm.Update(live, updated, manager)
	if err != nil {
		return nil, fmt.Errorf("managed fields of %s: %w", manager, err)
	}
	return fieldsOf(out, manager, status)
}

// fieldsOf returns the FieldsV1 of manager's entry in obj: its entry on
// the status subresource when status is set.
func fieldsOf(obj runtime.Object, manager string, status bool) ([]byte, error) {
	acc, err := meta(obj)
	if err != nil {
		return nil, err
	}
	for _, e := range acc.GetManagedFields() {
		if e.Manager == manager && (e.Subresource == "status") == status && e.FieldsV1 != nil {
			return e.FieldsV1.GetRawBytes(), nil
		}
	}
	return nil, fmt.Errorf("managed fields of %s: no entry", manager)
}

// meta is the object metadata of obj.
func meta(obj runtime.Object) (metav1.Object, error) {
	acc, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	return acc, nil
}

// shape returns the fields of the shape key, computing them once.
func (f *fieldManagers) shape(key string, compute func() ([]byte, error)) ([]byte, error) {
	raws, err := f.shapeSteps(key, func() ([][]byte, error) {
		raw, err := compute()
		return [][]byte{raw}, err
	})
	if err != nil {
		return nil, err
	}
	return raws[0], nil
}

// shapeSteps returns the fields of the updates of the shape key,
// computing them once.
func (f *fieldManagers) shapeSteps(key string, compute func() ([][]byte, error)) ([][]byte, error) {
	if raws, ok := f.shapes[key]; ok && !f.uncached {
		return raws, nil
	}
	raws, err := compute()
	if err != nil {
		return nil, err
	}
	f.shapes[key] = raws
	return raws, nil
}

// entry is a managed fields entry of an Update by manager at time at, with
// its own copy of raw.
func entry(manager, subresource, apiVersion string, at metav1.Time, raw []byte) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{
		Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: apiVersion,
		Time: &at, FieldsType: "FieldsV1", FieldsV1: fieldsV1(raw),
		Subresource: subresource,
	}
}

// podCreated records the fields of pod p's creation by its ReplicaSet's
// controller; p is defaulted but not yet admitted (the API server
// computes managed fields before admission). The scheduler binds pods
// through the binding subresource, which writes no managed fields, so the
// node name is not among them.
func (f *fieldManagers) podCreated(p *corev1.Pod) error {
	key := fmt.Sprintf("pod/%s/%t/%t/%t", p.OwnerReferences[0].UID, len(p.Spec.Tolerations) > 0,
		len(p.Spec.NodeSelector) > 0, p.Spec.Affinity != nil)
	raw, err := f.shape(key, func() ([]byte, error) {
		proto := p.DeepCopy()
		proto.Spec.NodeName = ""
		proto.Status = corev1.PodStatus{} // creation resets the status
		return owned(f.pod, &corev1.Pod{}, proto, managerControllers, false)
	})
	if err != nil {
		return err
	}
	p.ManagedFields = []metav1.ManagedFieldsEntry{entry(managerControllers, "", "v1", p.CreationTimestamp, raw)}
	return nil
}

// podRunning records the fields of the kubelet's status update of pod p,
// whose status is its RunningStatus with pod IP ip. The update applies to
// p as created, with the managed fields of its creation, as in the API
// server (the field manager tracks nothing on an object without any).
func (f *fieldManagers) podRunning(p *corev1.Pod, ip string) error {
	shapeIP := placeholderIP
	if f.uncached {
		shapeIP = ip
	}
	raw, err := f.shape("pod/kubelet", func() ([]byte, error) {
		live := p.DeepCopy()
		live.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: p.Status.QOSClass}
		updated := p.DeepCopy()
		updated.ManagedFields = nil
		updated.Status.PodIP, updated.Status.PodIPs = shapeIP, []corev1.PodIP{{IP: shapeIP}}
		return owned(f.podStatus, live, updated, managerKubelet, true)
	})
	if err != nil {
		return err
	}
	e := entry(managerKubelet, "status", "v1", statusTime(p), nil)
	e.FieldsV1.SetRawBytes(bytes.ReplaceAll(raw, []byte(placeholderIP), []byte(ip)))
	p.ManagedFields = append(p.ManagedFields, e)
	return nil
}

// podUnschedulable records the fields of the scheduler's status update of
// pod p, whose status is its UnschedulableStatus.
func (f *fieldManagers) podUnschedulable(p *corev1.Pod) error {
	raw, err := f.shape("pod/scheduler", func() ([]byte, error) {
		live := p.DeepCopy()
		live.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: p.Status.QOSClass}
		updated := p.DeepCopy()
		updated.ManagedFields = nil
		return owned(f.podStatus, live, updated, managerScheduler, true)
	})
	if err != nil {
		return err
	}
	p.ManagedFields = append(p.ManagedFields, entry(managerScheduler, "status", "v1", statusTime(p), raw))
	return nil
}

// statusTime is when a pod's status was last written: its last condition
// change, or its creation.
func statusTime(p *corev1.Pod) metav1.Time {
	t := p.CreationTimestamp
	for _, c := range p.Status.Conditions {
		if c.LastTransitionTime.After(t.Time) {
			t = c.LastTransitionTime
		}
	}
	return t
}

// nodeRegistered records the fields of node n's registration by its
// kubelet (metadata and spec, then status) and of the TTL controller's
// annotation. n is complete; created is the node as the kubelet created it
// (no TTL annotation, no status beyond capacity).
func (f *fieldManagers) nodeRegistered(n *corev1.Node, created *corev1.Node) error {
	raws, err := f.shapeSteps(fmt.Sprintf("node/%t", len(n.Spec.Taints) > 0), func() ([][]byte, error) {
		return f.nodeSteps(n, created)
	})
	if err != nil {
		return err
	}
	at := n.CreationTimestamp
	n.ManagedFields = []metav1.ManagedFieldsEntry{
		entry(managerKubelet, "", "v1", at, raws[0]),
		entry(managerControllers, "", "v1", at, raws[1]),
		entry(managerKubelet, "status", "v1", later(at, 10*time.Second), raws[2]),
	}
	return nil
}

// nodeSteps computes the fields of the steps of a node's registration, each
// update applied to the result of the one before, as in the API server:
// the kubelet's create, the TTL annotation, the kubelet's status.
func (f *fieldManagers) nodeSteps(n, created *corev1.Node) ([][]byte, error) {
	annotated := created.DeepCopy()
	annotated.Annotations = n.DeepCopy().Annotations
	full := n.DeepCopy()
	full.ManagedFields = nil
	steps := []struct {
		fm      *managedfields.FieldManager
		next    *corev1.Node
		manager string
	}{
		{f.node, created.DeepCopy(), managerKubelet},
		{f.node, annotated, managerControllers},
		{f.nodeStatus, full, managerKubelet},
	}
	var live runtime.Object = &corev1.Node{}
	raws := make([][]byte, len(steps))
	for i, st := range steps {
		out, err := st.fm.Update(live, st.next, st.manager)
		if err != nil {
			return nil, fmt.Errorf("managed fields of %s: %w", st.manager, err)
		}
		if raws[i], err = fieldsOf(out, st.manager, st.fm == f.nodeStatus); err != nil {
			return nil, err
		}
		live = out
	}
	return raws, nil
}

// fieldsV1 holds a copy of raw.
func fieldsV1(raw []byte) *metav1.FieldsV1 {
	f := &metav1.FieldsV1{}
	f.SetRawBytes(bytes.Clone(raw))
	return f
}
