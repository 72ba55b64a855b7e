package act

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

// CordonedAnnotation marks a node tidal cordoned to remove it
// (--cordon-node-before-terminating), so that only tidal's own cordon is
// undone when the removal does not complete, and a cordon set by someone
// else stays.
const CordonedAnnotation = "tidal.dev/cordoned-for-removal"

// markNode puts the ToBeDeleted taint on n and, with cordon, cordons it
// unless it is cordoned already. It reports whether n changed.
func markNode(n *corev1.Node, taint corev1.Taint, cordon bool) bool {
	changed := false
	if !HasTaint(n, taint.Key) {
		n.Spec.Taints = append(n.Spec.Taints, taint)
		changed = true
	}
	if cordon && !n.Spec.Unschedulable {
		n.Spec.Unschedulable = true
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[CordonedAnnotation] = "true"
		changed = true
	}
	return changed
}

// unmarkNode takes the ToBeDeleted taint off n and undoes tidal's cordon.
// It reports whether n changed.
func unmarkNode(n *corev1.Node) bool {
	changed := false
	kept := n.Spec.Taints[:0:0]
	for _, t := range n.Spec.Taints {
		if t.Key != scaledown.ToBeDeletedTaint {
			kept = append(kept, t)
		}
	}
	if len(kept) != len(n.Spec.Taints) {
		n.Spec.Taints = kept
		changed = true
	}
	if _, ours := n.Annotations[CordonedAnnotation]; ours {
		delete(n.Annotations, CordonedAnnotation)
		n.Spec.Unschedulable = false
		changed = true
	}
	return changed
}

// markedNode reports whether n carries tidal's mark of a removal.
func markedNode(n *corev1.Node) bool {
	_, cordoned := n.Annotations[CordonedAnnotation]
	return cordoned || HasTaint(n, scaledown.ToBeDeletedTaint)
}

// markForRemoval taints (and, with cordon, cordons) the node in one update.
func markForRemoval(ctx context.Context, client kubernetes.Interface, node string, now time.Time, cordon bool) error {
	return updateNode(ctx, client, node, func(n *corev1.Node) bool { return markNode(n, toBeDeleted(now), cordon) })
}

// unmarkForRemoval undoes markForRemoval; a node that is gone has nothing
// to undo.
func unmarkForRemoval(ctx context.Context, client kubernetes.Interface, node string) error {
	err := updateNode(ctx, client, node, unmarkNode)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
