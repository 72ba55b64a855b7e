package act

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
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
			_, err := a.evict(context.Background(), pod, time.Now(), false, nil)
			if (err != nil) != tt.wantErr {
				t.Fatalf("evict: error %v, want an error: %v", err, tt.wantErr)
			}
		})
	}
}

// The drains' evictions are remembered by the evicted pods' controllers
// (a pod with none, or an eviction that failed, leaves nothing) for an
// hour, for the hold on the pods they moved.
func TestDrainsRememberTheirEvictions(t *testing.T) {
	clock := testclock.NewFakeClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	a := NewLive(Deps{Client: fake.NewClientset(), Clock: clock, Metrics: telemetry.NewMetrics(prometheus.NewRegistry(), false)})
	owned := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default",
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web", UID: "rs-web", Controller: ptr.To(true)}}}}
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: "default"}}
	a.noteEvictions([]scaledown.Evicted{{Pod: owned, At: clock.Now()}, {Pod: bare, At: clock.Now()}, {Pod: owned}})
	got := a.Removing().Evictions
	if len(got) != 1 || got[0].Controller != "rs-web" || !got[0].At.Equal(clock.Now()) {
		t.Fatalf("evictions %v, want the one of rs-web at %v", got, clock.Now())
	}
	clock.Step(evictionMemory + time.Second)
	if got := a.Removing().Evictions; len(got) != 0 {
		t.Fatalf("evictions %v after %v, want none", got, evictionMemory)
	}
}
