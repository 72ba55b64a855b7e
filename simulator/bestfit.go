package simulator

import (
	"context"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// FindBestNode returns the index in nodes of the node the group's next pod
// fits on that it fills most (the least cpu and memory share left free
// after the pod: best fit), or -1. Ties go to the earlier node.
func (c *Checker) FindBestNode(ctx context.Context, gc *GroupCheck, nodes []fwk.NodeInfo) int {
	if gc.Status != nil {
		return -1
	}
	best, bestFree := -1, 0.0
	for i, ni := range nodes {
		if !gc.ResourcesFit(ni) {
			continue
		}
		free := gc.freeAfter(ni)
		if best >= 0 && free >= bestFree {
			continue
		}
		if c.Filter(ctx, gc.PodCheck, ni).IsSuccess() {
			best, bestFree = i, free
		}
	}
	return best
}

// freeAfter is the share of the node's cpu plus the share of its memory
// left free once the group's pod is on it.
func (gc *GroupCheck) freeAfter(ni fwk.NodeInfo) float64 {
	n, ok := ni.(*framework.NodeInfo)
	if !ok {
		return 0
	}
	share := func(want, used, have int64) float64 {
		if have <= 0 {
			return 0
		}
		return float64(have-used-want) / float64(have)
	}
	return share(gc.req.MilliCPU, n.Requested.MilliCPU, n.Allocatable.MilliCPU) +
		share(gc.req.Memory, n.Requested.Memory, n.Allocatable.Memory)
}
