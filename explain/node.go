package explain

import (
	"context"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tidal-autoscaler/tidal/core"
)

// Node writes whether tidal can remove the node and, when it cannot, what
// keeps it: the blocking pod and why (a PodDisruptionBudget, the
// safe-to-evict annotation), its utilization, the group's minimum.
func Node(ctx context.Context, client kubernetes.Interface, d *core.Decisions, name string, w io.Writer) error {
	if _, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		_, err = fmt.Fprintf(w, "Node %s not found.\n", name)
		return err
	} else if err != nil {
		return fmt.Errorf("get node %s: %w", name, err)
	}
	group, ok := d.NodeGroupOfNode[name]
	if !ok {
		_, err := fmt.Fprintf(w, "Node %s belongs to no node group: tidal never removes it.\n", name)
		return err
	}
	_, err := fmt.Fprintln(w, nodeAnswer(d, name, group))
	return err
}

// nodeAnswer is one line on a node of group.
func nodeAnswer(d *core.Decisions, name, group string) string {
	for _, r := range d.Replacing {
		if r.Node == name {
			return fmt.Sprintf("Node %s (node group %s) is being replaced: %s.", name, group, replacingWhy(r))
		}
	}
	sd := d.ScaleDown
	for _, u := range sd.Unneeded {
		if u.Node == name {
			what := fmt.Sprintf("utilization %.2f", u.Utilization)
			if u.Empty {
				what += ", no pod to move"
			} else {
				what += fmt.Sprintf(", %d pod(s) to move", len(u.PodsToMove))
			}
			answer := fmt.Sprintf("Node %s (node group %s) can be removed (%s): tidal removes it once it has been unneeded for --scale-down-unneeded-time.", name, group, what)
			if sd.Cooldown != "" {
				answer += " No removal starts now: " + sd.Cooldown + "."
			}
			return answer
		}
	}
	for _, u := range sd.Unremovable {
		if u.Node == name {
			return fmt.Sprintf("Node %s (node group %s) cannot be removed: %s.", name, group, unremovableWhy(u))
		}
	}
	switch {
	case !d.Healthy:
		return fmt.Sprintf("Node %s (node group %s): tidal does not scale down while the cluster is unhealthy: %s.", name, group, d.HealthReason)
	case !sd.Planned:
		return fmt.Sprintf("Node %s (node group %s): scale-down did not run (disabled, or the iteration stopped before it).", name, group)
	}
	return fmt.Sprintf("Node %s (node group %s) is not a scale-down candidate (its group cannot be read, or it is not in the scheduler's view yet).", name, group)
}

// unremovableWhy words what keeps a node.
func unremovableWhy(u core.UnremovableNode) string {
	switch {
	case u.Pod != "" && u.Detail != "":
		return fmt.Sprintf("pod %s blocks it (%s: %s)", u.Pod, u.Blocker, u.Detail)
	case u.Pod != "":
		return fmt.Sprintf("pod %s blocks it (%s)", u.Pod, u.Blocker)
	}
	return u.Message
}

// replacingWhy words why and how a node is being replaced.
func replacingWhy(r core.ReplacingEntry) string {
	why := r.Cause
	if r.Detail != "" {
		why += " (" + r.Detail + ")"
	}
	switch r.State {
	case core.ReplacingWaitingForCapacity:
		why += "; it stays until the capacity asked for its pods is Ready"
	default:
		why += "; cordoned, drained, then deleted"
	}
	if r.Deadline != "" {
		why += ", by " + r.Deadline
	}
	return why
}
