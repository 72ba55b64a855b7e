package act

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	testclock "k8s.io/utils/clock/testing"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/nominate"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
	"github.com/tidal-autoscaler/tidal/core/telemetry"
)

// writeGroup is a node group that records every write asked of it.
type writeGroup struct {
	cloudprovider.NodeGroup
	mu     sync.Mutex
	writes []string
}

func (g *writeGroup) Id() string { return "g" }
func (g *writeGroup) note(w string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.writes = append(g.writes, w)
	return nil
}
func (g *writeGroup) IncreaseSize(context.Context, int) error { return g.note("IncreaseSize") }
func (g *writeGroup) DecreaseTargetSize(context.Context, int) error {
	return g.note("DecreaseTargetSize")
}
func (g *writeGroup) DeleteNodes(context.Context, []*corev1.Node) error { return g.note("DeleteNodes") }
func (g *writeGroup) TargetSize() (int, error)                          { return 1, g.note("TargetSize") }
func (g *writeGroup) Nodes() ([]cloudprovider.Instance, error)          { return nil, g.note("Nodes") }

func testDeps(t *testing.T, client *fake.Clientset) Deps {
	t.Helper()
	clock := testclock.NewFakeClock(time.Unix(1_800_000_000, 0))
	return Deps{Client: client, Events: telemetry.NewEvents(record.NewFakeRecorder(100), clock, false, nil),
		Status: noStatus{}, Clock: clock, Metrics: telemetry.NewMetrics(prometheus.NewRegistry(), false),
		Options: Options{MaxBulkSoftTaintCount: 10, MaxBulkSoftTaintTime: time.Minute}}
}

type noStatus struct{}

func (noStatus) Object() *corev1.ConfigMap { return nil }

func node(name string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: "local://" + name, Taints: taints}}
}

// Shadow mode: every kind of write goes to the dry-run actuator and none
// leaves it, neither to the API server nor to the cloud; the decisions are
// counted once while they stand, and nothing is reported grown, refused or
// started.
func TestDryRunLetsNoWriteOut(t *testing.T) {
	n1 := node("n1", toBeDeleted(time.Unix(1_700_000_000, 0)))
	client := fake.NewClientset(n1)
	var actions []string
	client.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		actions = append(actions, a.GetVerb()+" "+a.GetResource().Resource)
		return false, nil, nil
	})
	g := &writeGroup{}
	a := NewDryRun(testDeps(t, client))
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "p"}}
	for range 2 {
		a.Begin(ctx)
		up := a.Grow(ctx, Growth{Group: g, Up: scaleup.ScaleUp{Group: "g", From: 1, To: 3, Max: 5, Pods: []*corev1.Pod{pod}}})
		raise := a.Grow(ctx, Growth{Group: g, Up: scaleup.ScaleUp{Group: "g", From: 1, To: 2, Max: 5}, Why: "scheduled minimum of x"})
		cancel := a.Cancel(ctx, Cancel{Cancel: clusterstate.Cancel{Group: "g", Instances: []cloudprovider.Instance{{Id: "i-1"}}, Reason: "ProvisionTimeout"},
			Group: g, Nodes: []*corev1.Node{n1}, Waiting: []*corev1.Pod{pod}})
		st := a.SoftTaint(ctx, SoftTaints{Remove: []string{"n1"}, Add: []string{"n2"}, Since: map[string]time.Time{"n2": time.Unix(1, 0)}})
		started := a.Remove(ctx, []Removal{{Name: "n1", Node: n1, Group: g, Pods: []*corev1.Pod{pod}, Kind: "underutilized"}})
		if err := a.CleanUpTaints(ctx, []*corev1.Node{n1}); err != nil {
			t.Fatal(err)
		}
		if failed := a.Nominate(ctx, []nominate.Change{{UID: "q", Namespace: "ns", Name: "q"}},
			[]nominate.Change{{UID: "p", Namespace: "ns", Name: "p", Node: "n1"}}); len(failed) != 0 {
			t.Errorf("dry-run nominations failed: %v", failed)
		}
		a.End(true, map[string]int{"g": 1})
		a.Wait()
		for _, r := range []Result{up, raise, cancel} {
			if r.Grown != 0 || r.Refused != nil || r.Sizes != nil {
				t.Errorf("dry-run result %+v: want nothing grown, refused or read again", r)
			}
		}
		if st.Written != 0 || len(started) != 0 || len(a.Removing().Nodes) != 0 {
			t.Errorf("dry run wrote %d taints, started %v, removing %v", st.Written, started, a.Removing().Nodes)
		}
	}
	if len(actions) != 0 || len(g.writes) != 0 {
		t.Fatalf("writes left the dry-run actuator: API %v, cloud %v", actions, g.writes)
	}
	m := a.Metrics
	for kind, want := range map[string]float64{"scale_up": 2, "cancel": 1, "scale_down": 1} {
		if got := testutil.ToFloat64(m.DryRunDecisions.WithLabelValues(kind, "g")); got != want {
			t.Errorf("dry-run %s decisions %v, want %v (each once while it stands)", kind, got, want)
		}
	}
	if got := testutil.ToFloat64(m.DryRunTargetSize.WithLabelValues("g")); got != 4 {
		t.Errorf("would-be target %v, want 1 + 2 + 1", got)
	}
}

// The live actuator against the local cloud: a growth the cloud accepts
// returns the nodes added and the group's target grows; one the cloud
// refuses returns the refusal and adds nothing. It changes no state of the
// loop: the results are all it hands back.
func TestLiveGrowReturnsWhatTheCloudDid(t *testing.T) {
	client := fake.NewClientset()
	one := 1
	cloud, err := local.New(client, &local.Config{NodeGroups: []local.GroupSpec{{Name: "g", MinSize: 0, MaxSize: 5, InitialSize: &one,
		Zone: "zone-a", InstanceType: "standard-2", CPU: resource.MustParse("2"), Memory: resource.MustParse("4Gi")}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := cloud.Start(ctx); err != nil {
		t.Fatal(err)
	}
	g := cloud.NodeGroups()[0]
	a := NewLive(testDeps(t, client))
	r := a.Grow(ctx, Growth{Group: g, Up: scaleup.ScaleUp{Group: "g", From: 1, To: 3, Max: 5}})
	if target, _ := g.TargetSize(); r.Grown != 2 || r.Refused != nil || target != 3 {
		t.Fatalf("accepted growth: result %+v, target %d; want 2 nodes grown, target 3", r, target)
	}
	if err := cloud.SetFault("g", local.FaultAPIError); err != nil {
		t.Fatal(err)
	}
	r = a.Grow(ctx, Growth{Group: g, Up: scaleup.ScaleUp{Group: "g", From: 3, To: 4, Max: 5}, Why: "scheduled minimum of x", Trigger: "spare"})
	if target, _ := g.TargetSize(); r.Grown != 0 || r.Refused == nil || target != 3 {
		t.Fatalf("refused growth: result %+v, target %d; want the refusal and target 3", r, target)
	}
	if v := testutil.ToFloat64(a.Metrics.FailedScaleUps.WithLabelValues("g", "cloudProviderError")); v != 1 {
		t.Errorf("failed scale-ups %v, want 1", v)
	}
	if v := testutil.ToFloat64(a.Metrics.ScaleUps.WithLabelValues("g")); v != 1 {
		t.Errorf("scale-ups %v, want the accepted one", v)
	}
}

// The live actuator's soft taints: the writes within the budget reach the
// API server, the rest wait, and each failure is returned by node.
func TestLiveSoftTaintReturnsWrittenLeftAndFailed(t *testing.T) {
	client := fake.NewClientset(node("n1"), node("n2", deletionCandidate(time.Unix(1, 0))), node("n3"))
	d := testDeps(t, client)
	d.Options.MaxBulkSoftTaintCount = 3
	a := NewLive(d)
	since := time.Unix(1_799_999_000, 0)
	res := a.SoftTaint(context.Background(), SoftTaints{Remove: []string{"n2"}, Add: []string{"n1", "gone", "n3"},
		Since: map[string]time.Time{"n1": since, "gone": since, "n3": since}})
	if res.Written != 3 || res.Left != 1 || len(res.Failed) != 1 || res.Failed["gone"] == nil {
		t.Fatalf("result %+v: want 3 written (one failed: the node is gone), 1 left", res)
	}
	n1, _ := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	n2, _ := client.CoreV1().Nodes().Get(context.Background(), "n2", metav1.GetOptions{})
	if at, ok := TaintTime(n1, scaledown.DeletionCandidateTaint); !ok || !at.Equal(since) || HasTaint(n2, scaledown.DeletionCandidateTaint) {
		t.Fatalf("n1 taint %v %v, n2 tainted %v: want n1 tainted since %v, n2 not", at, ok, HasTaint(n2, scaledown.DeletionCandidateTaint), since)
	}
}

// Stale deletion taints come off every node that has one; a node the API
// server will not update is returned as an error, the others still done.
func TestLiveCleanUpTaints(t *testing.T) {
	stale := toBeDeleted(time.Unix(1_700_000_000, 0))
	client := fake.NewClientset(node("n1", stale), node("n2", stale))
	a := NewLive(testDeps(t, client))
	gone := node("gone", stale)
	// n2 as the informer has it carries no taint: it is left alone.
	err := a.CleanUpTaints(context.Background(), []*corev1.Node{node("n1", stale), node("n2"), gone})
	if err != nil {
		t.Fatalf("a node that is gone has nothing to undo, got %v", err)
	}
	n1, _ := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	if HasTaint(n1, scaledown.ToBeDeletedTaint) {
		t.Fatal("the stale taint is still on n1")
	}
	client.PrependReactor("update", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("server unavailable")
	})
	if err := a.CleanUpTaints(context.Background(), []*corev1.Node{node("n2", stale)}); err == nil {
		t.Fatal("a failed clean-up returned no error")
	}
}

// bounded returns the call's own answer when it comes, also one that comes
// with the context already ended, and the context's error only for a call
// that has not answered.
func TestBoundedPrefersTheAnswer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := bounded(ctx, "increase size", func(context.Context) error { return nil }); err != nil {
		// The call may or may not have answered before bounded looked;
		// only an answer it saw may be reported, so nil or the deadline.
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("bounded = %v, want the answer or the context's end", err)
		}
	}
	hang := make(chan struct{})
	defer close(hang)
	err := bounded(ctx, "increase size", func(context.Context) error { <-hang; return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("bounded over a call that never answers = %v, want the context's end", err)
	}
	if err := bounded(context.Background(), "x", func(context.Context) error { return errors.New("quota") }); err == nil || err.Error() != "quota" {
		t.Fatalf("bounded = %v, want the call's own error", err)
	}
}
