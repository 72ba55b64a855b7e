package consolidate

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Settling is what the loop sees of a replacement whose old nodes went to
// their drains.
type Settling struct {
	// Removing are the nodes whose removal is in progress.
	Removing []string
	// Pending are the pods waiting for a node.
	Pending []*corev1.Pod
	Now     time.Time
	// Timeout bounds the wait after the drains began: a replacement held
	// longer is let go (a moved pod that never lands would otherwise hold
	// the new nodes from scale-down for ever).
	Timeout time.Duration
}

// Settle says whether f, draining, has settled: every old node's removal
// has ended and no pod of a controller whose pods were moved waits for a
// node (the evicted pods were recreated and placed). why tells what it
// still waits for, or, once settled, whether the wait ran out.
func Settle(f InFlight, s Settling) (settled bool, why string) {
	for _, o := range f.Old {
		if slices.Contains(s.Removing, o.Node) {
			return s.timedOut(f, "old node "+o.Node+" is still being drained")
		}
	}
	owners := map[types.UID]bool{}
	for _, p := range f.Pods() {
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
			owners[ref.UID] = true
		}
	}
	waiting := 0
	for _, p := range s.Pending {
		if ref := metav1.GetControllerOfNoCopy(p); ref != nil && owners[ref.UID] {
			waiting++
		}
	}
	if waiting > 0 {
		return s.timedOut(f, fmt.Sprintf("%d moved pod(s) wait for a node", waiting))
	}
	return true, ""
}

func (s Settling) timedOut(f InFlight, why string) (bool, string) {
	if s.Now.Before(f.Draining.Add(s.Timeout)) {
		return false, why
	}
	return true, fmt.Sprintf("let go after %s: %s", s.Timeout, why)
}
