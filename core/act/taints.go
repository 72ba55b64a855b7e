package act

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

// toBeDeleted is the hard taint put on a node before it is drained.
func toBeDeleted(now time.Time) corev1.Taint {
	return corev1.Taint{Key: scaledown.ToBeDeletedTaint, Value: strconv.FormatInt(now.Unix(), 10), Effect: corev1.TaintEffectNoSchedule}
}

// deletionCandidate is the soft taint of an unneeded node; its value is
// when the node became unneeded, so a restarted tidal remembers.
func deletionCandidate(since time.Time) corev1.Taint {
	return corev1.Taint{Key: scaledown.DeletionCandidateTaint, Value: strconv.FormatInt(since.Unix(), 10), Effect: corev1.TaintEffectPreferNoSchedule}
}

// TaintTime reads the time a tidal (or Cluster Autoscaler) taint was
// put, if the node has it.
func TaintTime(n *corev1.Node, key string) (time.Time, bool) {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			if sec, err := strconv.ParseInt(t.Value, 10, 64); err == nil {
				return time.Unix(sec, 0), true
			}
			return time.Time{}, true
		}
	}
	return time.Time{}, false
}

// HasTaint reports whether the node has a taint with key.
func HasTaint(n *corev1.Node, key string) bool {
	_, ok := TaintTime(n, key)
	return ok
}

// addTaint puts taint on the node unless a taint with its key is there.
func addTaint(ctx context.Context, client kubernetes.Interface, node string, taint corev1.Taint) error {
	return updateNode(ctx, client, node, func(n *corev1.Node) bool {
		if HasTaint(n, taint.Key) {
			return false
		}
		n.Spec.Taints = append(n.Spec.Taints, taint)
		return true
	})
}

// removeTaint takes the key's taints off the node; a node that is gone has
// none.
func removeTaint(ctx context.Context, client kubernetes.Interface, node, key string) error {
	err := updateNode(ctx, client, node, func(n *corev1.Node) bool {
		kept := n.Spec.Taints[:0:0]
		for _, t := range n.Spec.Taints {
			if t.Key != key {
				kept = append(kept, t)
			}
		}
		if len(kept) == len(n.Spec.Taints) {
			return false
		}
		n.Spec.Taints = kept
		return true
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// updateNode reads the node, lets change edit it, and writes it back,
// retrying on conflicts. change returns false when there is nothing to do.
func updateNode(ctx context.Context, client kubernetes.Interface, name string, change func(*corev1.Node) bool) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !change(n) {
			return nil
		}
		if _, err := client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update node %s: %w", name, err)
		}
		return nil
	})
}
