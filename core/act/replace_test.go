package act

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/interrupt"
)

// pdbHeld is a live actuator whose every eviction a PodDisruptionBudget
// refuses (429), on a real clock, with node n1 running pod p1.
func pdbHeld(t *testing.T, maxEviction time.Duration) (*Live, *writeGroup, Replacement) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p1", Namespace: "ns", UID: "p1"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	client := fake.NewClientset(node("n1"), pod)
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	})
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := indexer.Add(pod); err != nil {
		t.Fatal(err)
	}
	deps := testDeps(t, client)
	deps.Clock = clock.RealClock{}
	deps.Pods, deps.PodsSynced = corelisters.NewPodLister(indexer), func() bool { return true }
	deps.Options.MaxPodEvictionTime, deps.Options.MaxGracefulTerminationSec = maxEviction, 30
	g := &writeGroup{}
	r := Replacement{Removal: Removal{Name: "n1", Node: node("n1"), Group: g, Pods: []*corev1.Pod{pod}}, Write: true}
	return NewLive(deps), g, r
}

// waitReplaced waits for the replacements to end, failing after within.
func waitReplaced(t *testing.T, a *Live, within time.Duration, after string) {
	t.Helper()
	done := make(chan struct{})
	go func() { a.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(within):
		t.Fatalf("the drain still runs %v %s", within, after)
	}
}

func deleted(g *writeGroup) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Contains(g.writes, "DeleteNodes")
}

// A node drained on a rebalance recommendation (no deadline) whose PDB
// holds the drain up: the instance then shuts down (a state change, due
// now). The drain under way ends at that deadline and the node is
// deleted, instead of honouring the PDB for --max-pod-eviction-time.
func TestSoonerDeadlineEndsTheDrainUnderWay(t *testing.T) {
	a, g, r := pdbHeld(t, 10*time.Minute)
	ctx := context.Background()
	r.Mark = interrupt.Mark{Kind: cloudprovider.RebalanceRecommendation, Received: time.Now()}
	if failed := a.Replace(ctx, ctx, []Replacement{r}); len(failed) != 0 {
		t.Fatal(failed)
	}
	time.Sleep(300 * time.Millisecond)
	if deleted(g) {
		t.Fatal("the node was deleted while its PDB held the drain and no deadline had come")
	}
	if n := a.Removing().Nodes; !slices.Contains(n, "n1") {
		t.Fatalf("removing %v, want n1 being replaced", n)
	}
	r.Mark = interrupt.Mark{Kind: cloudprovider.StateChange, Detail: "shutting-down", Deadline: time.Now().Add(200 * time.Millisecond), Received: time.Now()}
	if failed := a.Replace(ctx, ctx, []Replacement{r}); len(failed) != 0 {
		t.Fatal(failed)
	}
	waitReplaced(t, a, 20*time.Second, "after the sooner deadline")
	if !deleted(g) {
		t.Fatalf("cloud writes %v: the node was not deleted once its deadline passed", g.writes)
	}
	n, err := a.Client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m, _, _ := interrupt.MarkOf(n); m.Kind != cloudprovider.StateChange {
		t.Errorf("node annotated %+v, want the state change's mark", m)
	}
}

// A scheduled change hours ahead whose PDB holds the drain past
// --max-pod-eviction-time: the replacement fails (and is tried again)
// rather than deleting the node with the deadline far off.
func TestFarDeadlineKeepsThePDB(t *testing.T) {
	a, g, r := pdbHeld(t, 100*time.Millisecond)
	ctx := context.Background()
	r.Mark = interrupt.Mark{Kind: cloudprovider.ScheduledChange, Deadline: time.Now().Add(time.Hour), Received: time.Now()}
	a.Replace(ctx, ctx, []Replacement{r})
	waitReplaced(t, a, 30*time.Second, "after --max-pod-eviction-time")
	if deleted(g) {
		t.Fatalf("the node was deleted an hour before its deadline, its PDB refusing the eviction")
	}
	if n := a.Removing().Nodes; slices.Contains(n, "n1") {
		t.Errorf("removing %v after the failed replacement, want n1 free to be tried again", n)
	}
}

// A node the cloud takes away is drained like a removal: its evictions are
// remembered by the pods' controllers, so the nodes of the pods it moved
// are held and later drains are paced by them too.
func TestInterruptionDrainsRecordTheirEvictions(t *testing.T) {
	client := fake.NewClientset(node("n1"))
	client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return a.GetSubresource() == "eviction", nil, nil
	})
	deps := testDeps(t, client)
	deps.Clock = clock.RealClock{}
	deps.Pods = corelisters.NewPodLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}))
	deps.PodsSynced = func() bool { return true }
	a := NewLive(deps)
	pod := webPod("web-1", "n1", time.Now().Add(-time.Hour))
	g := &writeGroup{}
	r := Replacement{Removal: Removal{Name: "n1", Node: node("n1"), Group: g, Pods: []*corev1.Pod{pod}}, Write: true,
		Mark: interrupt.Mark{Kind: cloudprovider.ScheduledChange, Deadline: time.Now().Add(time.Hour), Received: time.Now()}}
	ctx := context.Background()
	if failed := a.Replace(ctx, ctx, []Replacement{r}); len(failed) != 0 {
		t.Fatal(failed)
	}
	waitReplaced(t, a, 20*time.Second, "with its pod evicted")
	if !deleted(g) {
		t.Fatalf("cloud writes %v: the drained node was not deleted", g.writes)
	}
	if got := a.Removing().Evictions; len(got) != 1 || got[0].Controller != "rs-web" {
		t.Fatalf("evictions %v, want the interruption drain's of rs-web", got)
	}
}
