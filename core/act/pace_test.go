package act

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

// pacedDrain is a live actuator whose evictions all succeed, with a pod
// informer the test fills, and the pods it evicted, in order.
type pacedDrain struct {
	a       *Live
	clock   *testclock.FakeClock
	indexer cache.Indexer
	mu      sync.Mutex
	evicted []string
}

func newPacedDrain(t *testing.T, pacing scaledown.Pacing) *pacedDrain {
	client := fake.NewClientset()
	d := &pacedDrain{indexer: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})}
	client.PrependReactor("create", "pods", func(act k8stesting.Action) (bool, runtime.Object, error) {
		if act.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		d.mu.Lock()
		d.evicted = append(d.evicted, act.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction).Name)
		d.mu.Unlock()
		return true, nil, nil
	})
	deps := testDeps(t, client)
	deps.Pods, deps.PodsSynced = corelisters.NewPodLister(d.indexer), func() bool { return true }
	deps.Options.Pacing = pacing
	d.a, d.clock = NewLive(deps), deps.Clock.(*testclock.FakeClock)
	return d
}

func (d *pacedDrain) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.evicted)
}

// waitFor waits (in real time: the drain runs in its own goroutines)
// until n pods were evicted and the drain waits on the clock.
func (d *pacedDrain) waitFor(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for d.count() != n || !d.clock.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatalf("%d pod(s) evicted, want %d, and the drain waiting", d.count(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func webPod(name, node string, created time.Time) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name),
		CreationTimestamp: metav1.NewTime(created.Truncate(time.Second)),
		OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs-web", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: node}}
}

// A paced drain (limit 1) evicts its next pod only once the replacement
// of the last is bound to a node; a replacement that is never bound stops
// holding it back after the timeout. (One never made holds it back for
// scaledown.ReplacementGrace only: TestUnplaced.)
func TestPacedDrainEvictsOnceTheLastPodFoundANode(t *testing.T) {
	d := newPacedDrain(t, scaledown.Pacing{Limit: 1, Timeout: time.Minute})
	start := d.clock.Now()
	pods := []*corev1.Pod{webPod("web-1", "old", start.Add(-time.Hour)), webPod("web-2", "old", start.Add(-time.Hour)),
		webPod("web-3", "old", start.Add(-time.Hour))}
	for _, p := range pods {
		if err := d.indexer.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan []error, 1)
	go func() {
		_, errs := d.a.evictAll(context.Background(), pods, how{retry: true, deadline: start.Add(time.Hour), paced: true, record: true})
		done <- errs
	}()
	d.waitFor(t, 1)
	// The replacement exists, pending: the drain still waits.
	d.clock.Step(time.Second)
	if err := d.indexer.Add(webPod("web-new1", "", d.clock.Now())); err != nil {
		t.Fatal(err)
	}
	d.clock.Step(pacePollInterval)
	d.waitFor(t, 1)
	// Bound: the next pod goes.
	if err := d.indexer.Update(webPod("web-new1", "stay", d.clock.Now())); err != nil {
		t.Fatal(err)
	}
	d.clock.Step(pacePollInterval)
	d.waitFor(t, 2)
	// The second's replacement is made but never bound: the drain waits up
	// to the timeout from that eviction, not for ever.
	d.clock.Step(time.Second)
	if err := d.indexer.Add(webPod("web-new2", "", d.clock.Now())); err != nil {
		t.Fatal(err)
	}
	d.clock.Step(time.Minute - 2*time.Second)
	d.waitFor(t, 2)
	d.clock.Step(2 * time.Second)
	select {
	case errs := <-done:
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("drain: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the drain did not end after the timeout; %d pod(s) evicted", d.count())
	}
	if d.count() != 3 {
		t.Fatalf("%d pods evicted, want 3", d.count())
	}
}

// Without pacing every pod of a drain is evicted at once.
func TestUnpacedDrainEvictsAllAtOnce(t *testing.T) {
	d := newPacedDrain(t, scaledown.Pacing{})
	start := d.clock.Now()
	pods := []*corev1.Pod{webPod("web-1", "old", start.Add(-time.Hour)), webPod("web-2", "old", start.Add(-time.Hour))}
	_, errs := d.a.evictAll(context.Background(), pods, how{paced: true, record: true})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if d.count() != 2 {
		t.Fatalf("%d pods evicted, want 2", d.count())
	}
}
