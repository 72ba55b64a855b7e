package testenv

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// DumpOnFailure prints, when the test has failed, the pods of ns (node,
// phase, PodScheduled condition, nominated node) and the nodes whose name
// starts with prefix (Ready, unschedulable, taints, pods bound): what the
// scheduler saw, next to tidal's log.
func DumpOnFailure(t testing.TB, client kubernetes.Interface, ns, prefix string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx := context.Background()
		var b strings.Builder
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Logf("dump: list pods of %s: %v", ns, err)
			return
		}
		fmt.Fprintf(&b, "pods of %s:\n", ns)
		for _, p := range pods.Items {
			fmt.Fprintf(&b, "  %s node=%q phase=%s nominated=%q scheduled=%s\n", p.Name, p.Spec.NodeName, p.Status.Phase,
				p.Status.NominatedNodeName, scheduledCondition(&p))
		}
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Logf("dump: list nodes: %v", err)
			return
		}
		fmt.Fprintf(&b, "nodes %s*:\n", prefix)
		for _, n := range nodes.Items {
			if strings.HasPrefix(n.Name, prefix) {
				fmt.Fprintf(&b, "  %s created=%s ready=%s unschedulable=%v taints=%v\n", n.Name,
					n.CreationTimestamp.Format("15:04:05"), readyCondition(&n), n.Spec.Unschedulable, n.Spec.Taints)
			}
		}
		t.Log(b.String())
	})
}

func scheduledCondition(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return fmt.Sprintf("%s/%s at %s: %s", c.Status, c.Reason, c.LastTransitionTime.Format("15:04:05"), c.Message)
		}
	}
	return "none"
}

func readyCondition(n *corev1.Node) string {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return fmt.Sprintf("%s at %s", c.Status, c.LastTransitionTime.Format("15:04:05"))
		}
	}
	return "none"
}
