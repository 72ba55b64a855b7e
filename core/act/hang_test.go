package act

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

// hungGroup is a node group whose DeleteNodes never answers, whatever its
// context says, until the test ends; its other writes are recorded.
type hungGroup struct {
	writeGroup
	hang chan struct{}
}

func (g *hungGroup) DeleteNodes(context.Context, []*corev1.Node) error {
	<-g.hang
	return nil
}

func newHungGroup(t *testing.T) *hungGroup {
	g := &hungGroup{hang: make(chan struct{})}
	t.Cleanup(func() { close(g.hang) })
	return g
}

// A cancel whose DeleteNodes hangs ends at the iteration's deadline, as a
// refusal (logged; the cancel is decided again next iteration), and the
// group's sizes are read again.
func TestHungDeleteNodesOfACancelEndsAtTheDeadline(t *testing.T) {
	g := newHungGroup(t)
	a := NewLive(testDeps(t, fake.NewClientset()))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	returned := make(chan Result, 1)
	go func() {
		returned <- a.Cancel(ctx, Cancel{Group: g, Cancel: clusterstate.Cancel{Group: "g", Reason: "ProvisionTimeout",
			Instances: []cloudprovider.Instance{{Id: "local://late"}}}})
	}()
	select {
	case res := <-returned:
		if ctx.Err() == nil {
			t.Fatal("Cancel returned before the deadline, though DeleteNodes never answered")
		}
		if res.Sizes == nil {
			t.Errorf("Cancel read no sizes after the hung call: %+v", res)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Cancel still waits for DeleteNodes 30s after the deadline")
	}
}

// A removal whose DeleteNodes hangs ends when the loop stops: it counts as
// a failed removal, and the node's taint comes off.
func TestHungDeleteNodesOfARemovalEndsWithTheLoop(t *testing.T) {
	g := newHungGroup(t)
	client := fake.NewClientset(node("n1"))
	deps := testDeps(t, client)
	deps.Clock = clock.RealClock{}
	a := NewLive(deps)
	life, stop := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer stop()
	a.Remove(life, []Removal{{Name: "n1", Node: node("n1"), Group: g, Kind: "empty"}})
	done := make(chan struct{})
	go func() { a.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the removal still waits for DeleteNodes 30s after the loop stopped")
	}
	if r := a.Removing(); r.LastFailure.IsZero() || !r.LastDelete.IsZero() {
		t.Errorf("removal after a hung DeleteNodes: %+v, want it failed", r)
	}
	if v := testutil.ToFloat64(deps.Metrics.FailedScaleDowns.WithLabelValues("g")); v != 1 {
		t.Errorf("failed scale-downs %v, want 1", v)
	}
	n, err := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if HasTaint(n, scaledown.ToBeDeletedTaint) {
		t.Errorf("node n1 keeps its taint after the failed removal: %v", n.Spec.Taints)
	}
}
