package consolidate

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

// RecheckInput is what Recheck reads: the snapshot now that the new
// nodes are there, the replacement, the nodes being removed, and the rules
// that make pods movable.
type RecheckInput struct {
	Input
	Replacement Replacement
}

// Recheck runs before a replacement's old nodes are drained: their pods
// (read again from the snapshot) must all be movable and fit on the nodes
// that stay, the new ones included. A pod that cannot land stops the drain:
// why names it. The replacement comes back with the pods its drains evict
// as they are now. The snapshot is restored before Recheck returns.
func Recheck(ctx context.Context, in RecheckInput) (r Replacement, why string, err error) {
	snap := in.Checker.Snapshot()
	snap.Fork()
	defer snap.Revert()
	s := &sim{in: in.Input, used: map[string]bool{}, added: map[string]int{}}
	for _, name := range in.Deleting {
		if snap.NodeInfo(name) != nil {
			if err := snap.RemoveNode(name); err != nil {
				return r, "", err
			}
		}
	}
	pdbs := scaledown.NewPDBBudgets(in.PDBs)
	var moving []candidate
	for _, o := range in.Replacement.Old {
		ni := snap.NodeInfo(o.Node)
		if ni == nil {
			return r, fmt.Sprintf("old node %s is gone", o.Node), nil
		}
		pods := make([]*corev1.Pod, len(ni.Pods))
		for i, pi := range ni.Pods {
			pods[i] = pi.GetPod()
		}
		np := scaledown.ClassifyPods(pods, in.Rules, in.Owners, pdbs.Covered, in.Now)
		if np.Blocker != nil {
			return r, fmt.Sprintf("node %s: %s", o.Node, np.Blocker), nil
		}
		moving = append(moving, candidate{Candidate: Candidate{Name: o.Node, Group: o.Group}, pods: np})
	}
	r = in.Replacement
	r.Old = nil
	var infos []*framework.PodInfo
	for _, c := range moving {
		infos = append(infos, parsed(snap.NodeInfo(c.Name), c.pods.ToMove)...)
		r.Old = append(r.Old, Old{Node: c.Name, Group: c.Group, Pods: c.pods})
	}
	for _, c := range moving {
		if err := snap.RemoveNode(c.Name); err != nil {
			return r, "", err
		}
	}
	_, p, err := s.placeAll(ctx, largestFirst(infos), nil)
	if err != nil || p == nil {
		return r, "", err
	}
	return r, fmt.Sprintf("pod %s/%s fits on none of the nodes that stay", p.Namespace, p.Name), nil
}
