package simulator

import (
	"context"
	"fmt"

	fwk "k8s.io/kube-scheduler/framework"
)

// Schedule returns the index in nodes of the node the default scheduler
// would bind the group's next pod to: among the nodes that pass Filter,
// the one with the highest total score of the default profile's Score
// plugins (NodeResourcesFit least-allocated, NodeResourcesBalancedAllocation,
// ImageLocality, InterPodAffinity, NodeAffinity, PodTopologySpread,
// TaintToleration, VolumeBinding, with their weights), or -1 when none
// passes. A single feasible node is taken unscored, as the scheduler does.
// The scheduler breaks a tie at random; here the earlier node wins, so a
// placement is the same every time.
func (c *Checker) Schedule(ctx context.Context, gc *GroupCheck, nodes []fwk.NodeInfo) (int, error) {
	if gc.Status != nil {
		return -1, nil
	}
	var feasible []fwk.NodeInfo
	var index []int
	for i, ni := range nodes {
		if gc.ResourcesFit(ni) && c.Filter(ctx, gc.PodCheck, ni).IsSuccess() {
			feasible = append(feasible, ni)
			index = append(index, i)
		}
	}
	switch len(feasible) {
	case 0:
		return -1, nil
	case 1:
		return index[0], nil
	}
	state := gc.state.Clone()
	pod := gc.Pod
	if st := c.fw.RunPreScorePlugins(ctx, state, pod, feasible); !st.IsSuccess() {
		return -1, fmt.Errorf("pre-score pod %s/%s: %w", pod.Namespace, pod.Name, st.AsError())
	}
	scores, st := c.fw.RunScorePlugins(ctx, state, pod, feasible)
	if !st.IsSuccess() {
		return -1, fmt.Errorf("score pod %s/%s: %w", pod.Namespace, pod.Name, st.AsError())
	}
	best := 0
	for i := range scores {
		if scores[i].TotalScore > scores[best].TotalScore {
			best = i
		}
	}
	return index[best], nil
}
