package core

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

// The nodes a group's upcoming copies stand for are its registered nodes
// that cannot take pods yet, in name order, as many as it has upcoming;
// nodes on their way out are not among them, nor nodes of other groups.
func TestStartingNodesOfAGroup(t *testing.T) {
	node := func(name string, mutate func(*corev1.Node)) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if mutate != nil {
			mutate(n)
		}
		return n
	}
	o := &observation{
		nodes: []*corev1.Node{node("g-3", nil), node("g-1", nil), node("g-ready", nil), node("h-1", nil),
			node("g-tainted", func(n *corev1.Node) {
				n.Spec.Taints = []corev1.Taint{{Key: scaledown.ToBeDeletedTaint, Effect: corev1.TaintEffectNoSchedule}}
			}),
			node("g-deleted", func(n *corev1.Node) { n.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)} }),
			node("g-2", nil)},
		groupOfNode: map[string]string{"g-1": "g", "g-2": "g", "g-3": "g", "g-ready": "g", "g-tainted": "g", "g-deleted": "g", "h-1": "h"},
		observed:    map[string]clusterstate.NodeObservation{"g-ready": {Ready: true}},
	}
	for _, tc := range []struct {
		upcoming int
		want     []string
	}{
		{0, nil},
		{2, []string{"g-1", "g-2"}},
		{5, []string{"g-1", "g-2", "g-3"}},
	} {
		if got := o.starting("g", tc.upcoming); !slices.Equal(got, tc.want) {
			t.Errorf("upcoming %d: starting %v, want %v", tc.upcoming, got, tc.want)
		}
	}
}
