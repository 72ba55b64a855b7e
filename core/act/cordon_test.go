package act

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

// --cordon-node-before-terminating: a removal cordons the node with its
// taint, and undoing the removal undoes only tidal's own cordon.
func TestCordonForRemoval(t *testing.T) {
	taint := toBeDeleted(time.Unix(1_800_000_000, 0))
	fresh := func(cordoned bool) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: corev1.NodeSpec{Unschedulable: cordoned}}
	}
	tests := []struct {
		name          string
		node          *corev1.Node
		cordon        bool
		wantCordoned  bool
		wantAfterUndo bool
	}{
		{"cordon: tidal cordons and uncordons", fresh(false), true, true, false},
		{"cordon, node cordoned by someone else: stays cordoned", fresh(true), true, true, true},
		{"no cordon: taint only", fresh(false), false, false, false},
		{"no cordon, cordoned by someone else: stays cordoned", fresh(true), false, true, true},
	}
	for _, tc := range tests {
		n := tc.node
		if !markNode(n, taint, tc.cordon) {
			t.Errorf("%s: marking changed nothing", tc.name)
		}
		if !HasTaint(n, scaledown.ToBeDeletedTaint) || n.Spec.Unschedulable != tc.wantCordoned || !markedNode(n) {
			t.Errorf("%s: after marking taints %v unschedulable %v, want the taint and unschedulable %v", tc.name, n.Spec.Taints, n.Spec.Unschedulable, tc.wantCordoned)
		}
		if markNode(n, taint, tc.cordon) {
			t.Errorf("%s: marking twice changed the node again", tc.name)
		}
		if !unmarkNode(n) {
			t.Errorf("%s: undoing changed nothing", tc.name)
		}
		if HasTaint(n, scaledown.ToBeDeletedTaint) || n.Spec.Unschedulable != tc.wantAfterUndo || markedNode(n) {
			t.Errorf("%s: after undoing taints %v unschedulable %v annotations %v, want no taint and unschedulable %v",
				tc.name, n.Spec.Taints, n.Spec.Unschedulable, n.Annotations, tc.wantAfterUndo)
		}
	}
}
