package act

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/core/telemetry"
)

// An eviction answered 409 Conflict is an eviction only when the pod was
// replaced (its UID precondition failed); while the pod is still there it
// is an error like any other, never read as success.
func TestEvictionConflictIsNoEvictionWhileThePodStays(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", UID: "u1"}}
	for _, tt := range []struct {
		name    string
		cached  *corev1.Pod
		wantErr bool
	}{
		{"pod still there", pod, true},
		{"replaced by another of its name", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", UID: "u2"}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(tt.cached)
			client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.GetSubresource() != "eviction" {
					return false, nil, nil
				}
				return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, pod.Name, nil)
			})
			indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			if err := indexer.Add(tt.cached); err != nil {
				t.Fatal(err)
			}
			a := NewLive(Deps{Client: client, Pods: corelisters.NewPodLister(indexer), PodsSynced: func() bool { return true },
				Clock: testclock.NewFakeClock(time.Now()), Metrics: telemetry.NewMetrics(prometheus.NewRegistry(), false), Options: Options{MaxGracefulTerminationSec: 60}})
			_, err := a.evict(context.Background(), pod, how{deadline: time.Now()})
			if (err != nil) != tt.wantErr {
				t.Fatalf("evict: error %v, want an error: %v", err, tt.wantErr)
			}
		})
	}
}

// The drains' evictions are remembered by the evicted pods' controllers
// (a pod with none, or one found gone, leaves nothing) for an hour, for
// the hold on the pods they moved; DaemonSet pods' are not.
func TestDrainsRememberTheirEvictions(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("create", "pods", func(act k8stesting.Action) (bool, runtime.Object, error) {
		if act.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		if name := act.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction).Name; name == "gone" {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
		}
		return true, nil, nil
	})
	deps := testDeps(t, client)
	clock := deps.Clock.(*testclock.FakeClock)
	a := NewLive(deps)
	owned := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web", UID: "rs-web", Controller: ptr.To(true)}}}}
	}
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: "default"}}
	_, errs := a.evictAll(context.Background(), []*corev1.Pod{owned("web-1"), bare, owned("gone")}, how{record: true})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if _, err := a.evict(context.Background(), owned("daemon"), how{}); err != nil {
		t.Fatal(err)
	}
	got := a.Removing().Evictions
	if len(got) != 1 || got[0].Controller != "rs-web" || !got[0].At.Equal(clock.Now()) {
		t.Fatalf("evictions %v, want the one of rs-web at %v", got, clock.Now())
	}
	clock.Step(scaledown.EvictionMemory + time.Second)
	if got := a.Removing().Evictions; len(got) != 0 {
		t.Fatalf("evictions %v after %v, want none", got, scaledown.EvictionMemory)
	}
}
