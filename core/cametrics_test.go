package core

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

func TestMaxNodes(t *testing.T) {
	groups := []groupSizes{{maxSize: 5}, {maxSize: 7}}
	for _, tc := range []struct{ maxTotal, want int }{{0, 12}, {20, 12}, {10, 10}} {
		if got := maxNodes(groups, tc.maxTotal); got != tc.want {
			t.Errorf("maxNodes with --max-nodes-total=%d: %d, want %d", tc.maxTotal, got, tc.want)
		}
	}
}

func TestNotBeingDeleted(t *testing.T) {
	node := func(name string, taints ...string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, k := range taints {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: k})
		}
		return n
	}
	nodes := []*corev1.Node{node("a"), node("b", scaledown.ToBeDeletedTaint), node("c", scaledown.DeletionCandidateTaint)}
	var names []string
	for _, n := range notBeingDeleted(nodes) {
		names = append(names, n.Name)
	}
	if !slices.Equal(names, []string{"a", "c"}) {
		t.Fatalf("nodes not being deleted: %v, want [a c]", names)
	}
	if len(nodes) != 3 || nodes[1].Name != "b" {
		t.Fatal("notBeingDeleted changed its input")
	}
}

func TestTooManyUnready(t *testing.T) {
	o := clusterstate.Options{OkTotalUnreadyCount: 3, MaxTotalUnreadyPercentage: 45}
	for _, tc := range []struct {
		unready, total int
		want           bool
	}{
		{3, 3, false},   // within the count allowed
		{4, 10, false},  // 40% of 10
		{5, 10, true},   // 50% of 10, more than 3
		{4, 100, false}, // 4% of 100
	} {
		if got := tooManyUnready(tc.unready, tc.total, o); got != tc.want {
			t.Errorf("%d unready of %d: %v, want %v", tc.unready, tc.total, got, tc.want)
		}
	}
}
