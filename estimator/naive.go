// Package estimator answers, for one node group, how many new nodes would
// make how many pending pods schedulable.
package estimator

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/simulator"
)

// Estimate is how many nodes of a group help which pods.
type Estimate struct {
	NodeCount int
	Pods      []*corev1.Pod
}

// Naive sizes a group by summed requests: the number of template nodes whose
// allocatable covers the sum of the pods' cpu, memory and pod slots, ignoring
// how the pods would actually pack. Pods the template cannot hold at all
// (selector, taints, or larger than a whole node) are left out.
func Naive(pods []*corev1.Pod, template *corev1.Node) Estimate {
	alloc := simulator.Allocatable(template)
	var sum simulator.Resources
	var fit []*corev1.Pod
	for _, p := range pods {
		if ok, _ := simulator.NodeAccepts(p, template); !ok {
			continue
		}
		req := simulator.PodRequests(p)
		if !alloc.Covers(req) {
			continue
		}
		sum = sum.Add(req)
		fit = append(fit, p)
	}
	if len(fit) == 0 {
		return Estimate{}
	}
	n := max(ceilDiv(sum.MilliCPU, alloc.MilliCPU), ceilDiv(sum.Memory, alloc.Memory), ceilDiv(sum.Pods, alloc.Pods))
	return Estimate{NodeCount: int(n), Pods: fit}
}

func ceilDiv(a, b int64) int64 {
	if b <= 0 {
		return 0
	}
	return (a + b - 1) / b
}
