package explain

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tidal-autoscaler/tidal/core"
)

// Pod writes why the pod namespace/name waits, or that it does not: the
// group tidal grows for it and by how many nodes, the groups that could
// host it, why each other cannot, and how the expander chose.
func Pod(ctx context.Context, client kubernetes.Interface, d *core.Decisions, namespace, name string, w io.Writer) error {
	ref := namespace + "/" + name
	p, err := client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = fmt.Fprintf(w, "Pod %s not found.\n", ref)
		return err
	}
	if err != nil {
		return fmt.Errorf("get pod %s: %w", ref, err)
	}
	if !core.IsPending(p) {
		return writePlaced(w, p)
	}
	if !d.Healthy {
		_, err = fmt.Fprintf(w, "Pod %s is pending, but tidal does not scale while the cluster is unhealthy: %s\n", ref, d.HealthReason)
		return err
	}
	return writePending(w, d.ScaleUp, ref)
}

func writePlaced(w io.Writer, p *corev1.Pod) error {
	where := "is not pending"
	if p.Spec.NodeName != "" {
		where = "runs on node " + p.Spec.NodeName
	}
	_, err := fmt.Fprintf(w, "Pod %s/%s %s (phase %s): it calls for no scale-up.\n", p.Namespace, p.Name, where, p.Status.Phase)
	return err
}

func writePending(w io.Writer, su core.ScaleUpDecisions, ref string) error {
	for _, up := range su.ScaleUps {
		if slices.Contains(up.Pods, ref) {
			return writeScaleUp(w, up, ref)
		}
	}
	for _, n := range su.NoScaleUp {
		if slices.Contains(n.Pods, ref) {
			fmt.Fprintf(w, "Pod %s is pending and no node group can host it:\n", ref)
			return writeReasons(w, n.Reasons)
		}
	}
	if g, ok := su.Awaiting[ref]; ok {
		_, err := fmt.Fprintf(w, "Pod %s is pending and fits on a node of group %s already requested: no new scale-up.\n", ref, g)
		return err
	}
	_, err := fmt.Fprintf(w, "Pod %s is pending but calls for no scale-up: it fits on an existing node, or is not considered "+
		"(priority below --expendable-pods-priority-cutoff, younger than --new-pod-scale-up-delay, or not yet tried by the scheduler).\n", ref)
	return err
}

func writeScaleUp(w io.Writer, up core.ScaleUpChoice, ref string) error {
	fmt.Fprintf(w, "Pod %s is pending; tidal grows node group %s by %d node(s) (%d -> %d) for it and %d other pod(s).\n",
		ref, up.NodeGroup, up.Nodes, up.From, up.To, len(up.Pods)-1)
	var opts []string
	for _, o := range up.Options {
		opts = append(opts, fmt.Sprintf("%s (+%d node(s) for %d pod(s))", o.NodeGroup, o.Nodes, o.Pods))
	}
	fmt.Fprintf(w, "  Could host it: %s\n", strings.Join(opts, ", "))
	if len(up.Expander) == 0 {
		fmt.Fprintf(w, "  Expander: no choice to make, one option\n")
	}
	for _, s := range up.Expander {
		fmt.Fprintf(w, "  Expander: %s kept [%s]\n", s.Strategy, strings.Join(s.Kept, ", "))
	}
	if len(up.Rejected) == 0 {
		return nil
	}
	fmt.Fprintf(w, "  Cannot host it:\n")
	return writeReasons(w, up.Rejected)
}

// writeReasons writes each node group's reasons, by group name.
func writeReasons(w io.Writer, reasons map[string][]string) error {
	for _, g := range slices.Sorted(maps.Keys(reasons)) {
		if _, err := fmt.Fprintf(w, "    %s: %s\n", g, strings.Join(reasons[g], ", ")); err != nil {
			return err
		}
	}
	return nil
}
