package controller

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// versionedClientset is a fake clientset whose objects carry resource
// versions that a write must match, as on an API server: an update or a
// patch made from a stale copy fails with a conflict instead of silently
// undoing a concurrent edit (the plain fake checks nothing).
func versionedClientset(objects ...runtime.Object) (*fake.Clientset, error) {
	cs := fake.NewClientset()
	tr := &versionedTracker{ObjectTracker: cs.Tracker()}
	for _, o := range objects {
		if err := tr.Add(o); err != nil {
			return nil, err
		}
	}
	cs.PrependReactor("*", "*", k8stesting.ObjectReaction(tr))
	return cs, nil
}

type versionedTracker struct {
	k8stesting.ObjectTracker
	mu   sync.Mutex
	last int64
}

// stamp gives obj the next resource version. Reactors pass their own
// copies (the fake deep-copies every action), so obj is changed in place:
// a patch returns the very object it stored.
func (v *versionedTracker) stamp(obj runtime.Object) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	v.last++
	m.SetResourceVersion(strconv.FormatInt(v.last, 10))
	return nil
}

// current fails with a conflict when obj names a resource version other
// than the stored object's; an empty one is an unconditional write.
func (v *versionedTracker) current(gvr schema.GroupVersionResource, obj runtime.Object, ns string) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if m.GetResourceVersion() == "" {
		return nil
	}
	stored, err := v.ObjectTracker.Get(gvr, ns, m.GetName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	sm, err := meta.Accessor(stored)
	if err != nil {
		return err
	}
	if sm.GetResourceVersion() != m.GetResourceVersion() {
		return apierrors.NewConflict(gvr.GroupResource(), m.GetName(),
			fmt.Errorf("the object has been modified (resource version %s, stored %s)", m.GetResourceVersion(), sm.GetResourceVersion()))
	}
	return nil
}

func (v *versionedTracker) Add(obj runtime.Object) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	obj = obj.DeepCopyObject()
	if err := v.stamp(obj); err != nil {
		return err
	}
	return v.ObjectTracker.Add(obj)
}

func (v *versionedTracker) Create(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.CreateOptions) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.stamp(obj); err != nil {
		return err
	}
	return v.ObjectTracker.Create(gvr, obj, ns, opts...)
}

func (v *versionedTracker) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.UpdateOptions) error {
	return v.write(gvr, obj, ns, func() error { return v.ObjectTracker.Update(gvr, obj, ns, opts...) })
}

func (v *versionedTracker) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	return v.write(gvr, obj, ns, func() error { return v.ObjectTracker.Patch(gvr, obj, ns, opts...) })
}

// write stores obj with store if it was made from the stored version.
func (v *versionedTracker) write(gvr schema.GroupVersionResource, obj runtime.Object, ns string, store func() error) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.current(gvr, obj, ns); err != nil {
		return err
	}
	if err := v.stamp(obj); err != nil {
		return err
	}
	return store()
}

func TestVersionedClientsetRejectsStaleWrites(t *testing.T) {
	ctx := context.Background()
	client, err := versionedClientset(hpaObject("ns", "web"))
	if err != nil {
		t.Fatal(err)
	}
	objects := client.AutoscalingV2().HorizontalPodAutoscalers("ns")
	stale, err := objects.Get(ctx, "web", metav1.GetOptions{})
	if err != nil || stale.ResourceVersion == "" {
		t.Fatalf("get: %v, resource version %q", err, stale.ResourceVersion)
	}
	fresh := stale.DeepCopy()
	fresh.Annotations = map[string]string{WatermarksAnnotation: `{"high":`}
	edited, err := objects.Update(ctx, fresh, metav1.UpdateOptions{})
	if err != nil || edited.ResourceVersion == stale.ResourceVersion {
		t.Fatalf("update: %v, resource version %q after %q", err, edited.ResourceVersion, stale.ResourceVersion)
	}
	stale.Status.CurrentReplicas = 3
	if _, err := objects.UpdateStatus(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("a status write from a stale copy: %v, want a conflict", err)
	}
	if got, _ := objects.Get(ctx, "web", metav1.GetOptions{}); got.Annotations[WatermarksAnnotation] != `{"high":` {
		t.Fatalf("the edit was undone: %v", got.Annotations)
	}
	patched, err := objects.Patch(ctx, "web", types.MergePatchType, []byte(`{"metadata":{"annotations":{"a":"b"}}}`), metav1.PatchOptions{})
	if err != nil || patched.ResourceVersion == edited.ResourceVersion || patched.Annotations["a"] != "b" {
		t.Fatalf("patch: %v, resource version %q after %q", err, patched.ResourceVersion, edited.ResourceVersion)
	}
	edited.Status.CurrentReplicas = 3
	if _, err := objects.UpdateStatus(ctx, edited, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("a status write from before a patch: %v, want a conflict", err)
	}
	patched.Status.CurrentReplicas = 3
	if _, err := objects.UpdateStatus(ctx, patched, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("a status write from the current object: %v", err)
	}
}
