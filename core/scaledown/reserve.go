package scaledown

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tidal-autoscaler/tidal/simulator"
)

// takeDeleting takes the nodes being removed out of the snapshot (forked
// by decide) and returns the pods their drains have yet to evict, in a
// fixed order: their room is reserved (reserve) before any candidate
// counts on it.
func takeDeleting(snap *simulator.Snapshot, deleting []string, now time.Time) ([]*framework.PodInfo, error) {
	var out []*framework.PodInfo
	for _, name := range slices.Sorted(slices.Values(deleting)) {
		ni := snap.NodeInfo(name)
		if ni == nil {
			continue
		}
		var left []*framework.PodInfo
		for _, pi := range ni.Pods {
			info, ok := pi.(*framework.PodInfo)
			if ok && stillToEvict(info.Pod, now) {
				left = append(left, info)
			}
		}
		slices.SortFunc(left, func(a, b *framework.PodInfo) int {
			return cmp.Or(cmp.Compare(a.Pod.Namespace, b.Pod.Namespace), cmp.Compare(a.Pod.Name, b.Pod.Name))
		})
		out = append(out, left...)
		if err := snap.RemoveNode(name); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// stillToEvict is a pod a drain under way has yet to evict and that will
// need room elsewhere: not a DaemonSet or mirror pod, not finished, not
// being deleted (its controller's new pod, pending, is pictured where it
// lands: Input.Arriving).
func stillToEvict(p *corev1.Pod, now time.Time) bool {
	return p.DeletionTimestamp == nil && !IsDaemonSetPod(p) && MustMove(p, now)
}

// reserve places the pods of the drains under way on the nodes that stay,
// as their removals' simulation placed them, so that a removal planned now
// never counts on room an earlier drain's pods need: two drains never
// count on the same free room. A pod that fits nowhere is noted in the
// plan (Unreserved): the scheduler leaves it pending and scale-up sees it.
func (p *planner) reserve(ctx context.Context, pods []*framework.PodInfo) error {
	snap := p.in.Checker.Snapshot()
	for _, info := range pods {
		dest := p.destination(ctx, p.in.Checker.CheckPod(ctx, MovedPod(info)))
		if dest == "" {
			p.plan.Unreserved = append(p.plan.Unreserved, info.Pod)
			continue
		}
		if err := snap.AddPod(info, dest); err != nil {
			return fmt.Errorf("reserve room on %s for pod %s/%s of a node being drained: %w", dest, info.Pod.Namespace, info.Pod.Name, err)
		}
		p.plan.Reserved++
		if p.run != nil {
			p.run.wroteEarly(dest, info)
		}
	}
	return nil
}
