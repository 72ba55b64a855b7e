package act

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/tidal-autoscaler/tidal/core/nominate"
)

// The live actuator sets and clears status.nominatedNodeName and touches
// nothing else of the pod; a pod that was replaced by one of the same name
// (another UID) or is gone is a failed write, returned and counted.
func TestLiveNominateWritesOnlyTheNomination(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u-p", Labels: map[string]string{"app": "x"}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
	q := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "ns", UID: "u-q"},
		Status: corev1.PodStatus{Phase: corev1.PodPending, NominatedNodeName: "n0"}}
	client := fake.NewClientset(p, q)
	a := NewLive(testDeps(t, client))
	ctx := context.Background()
	failed := a.Nominate(ctx, []nominate.Change{{UID: "u-q", Namespace: "ns", Name: "q"}},
		[]nominate.Change{{UID: "u-p", Namespace: "ns", Name: "p", Node: "n1"}, {UID: "u-gone", Namespace: "ns", Name: "gone", Node: "n1"}})
	if len(failed) != 1 || failed[0].Name != "gone" {
		t.Errorf("failed = %v, want only the pod that does not exist", failed)
	}
	got, err := client.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.NominatedNodeName != "n1" || got.Status.Phase != corev1.PodPending || got.Labels["app"] != "x" {
		t.Errorf("pod p after nomination: nominated %q, phase %q, labels %v", got.Status.NominatedNodeName, got.Status.Phase, got.Labels)
	}
	if got, _ := client.CoreV1().Pods("ns").Get(ctx, "q", metav1.GetOptions{}); got.Status.NominatedNodeName != "" {
		t.Errorf("pod q still nominated to %q after the clear", got.Status.NominatedNodeName)
	}
	m := a.Metrics.Nominations
	for result, want := range map[string]float64{"set": 1, "cleared": 1, "failed": 1} {
		if v := testutil.ToFloat64(m.WithLabelValues(result)); v != want {
			t.Errorf("tidal_pod_nominations_total{result=%q} = %v, want %v", result, v, want)
		}
	}
}
