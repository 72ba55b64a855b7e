package scaledown

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tidal-autoscaler/tidal/simulator"
)

// kind is a kind of pod, as simulator.PlacementKey sets them apart: the nodes whose
// taints and labels admit it (those never change during a plan, so scans
// skip nodes that would refuse the kind anyway) and where its last pod
// fitted.
type kind struct {
	nodes []fwk.NodeInfo
	hint  int
}

// destination finds a node for a moved pod among the nodes left that admit
// its kind, starting where the kind's last pod fitted.
func (p *planner) destination(ctx context.Context, gc *simulator.GroupCheck) string {
	p.kindKey = simulator.PlacementKey(p.kindKey[:0], gc.Pod)
	k, ok := p.kinds[string(p.kindKey)]
	if !ok {
		k = &kind{nodes: simulator.Admitting(gc.Pod, p.in.Checker.Snapshot().Infos())}
		p.kinds[string(p.kindKey)] = k
	}
	n := len(k.nodes)
	if n == 0 || gc.Status != nil {
		return ""
	}
	start := min(k.hint, n-1)
	for i := 0; i < n; i++ {
		idx := (start + i) % n
		ni := k.nodes[idx]
		name := ni.Node().Name
		if p.gone[name] || name == p.removing || !gc.ResourcesFit(ni) || !p.in.Checker.Filter(ctx, gc.PodCheck, ni).IsSuccess() {
			continue
		}
		k.hint = idx
		return name
	}
	return ""
}

// MovedPod is the pod as the scheduler would see it after eviction: no
// node. The parsed terms and computed requests are kept.
func MovedPod(info *framework.PodInfo) *framework.PodInfo {
	pod := *info.Pod
	pod.Spec.NodeName = ""
	c := *info
	c.Pod = &pod
	return &c
}

// parsed returns the node's parsed pods for pods, in the same order.
func parsed(ni *framework.NodeInfo, pods []*corev1.Pod) []*framework.PodInfo {
	byPod := make(map[*corev1.Pod]*framework.PodInfo, len(ni.Pods))
	for _, pi := range ni.Pods {
		if info, ok := pi.(*framework.PodInfo); ok {
			byPod[info.Pod] = info
		}
	}
	out := make([]*framework.PodInfo, len(pods))
	for i, p := range pods {
		if out[i] = byPod[p]; out[i] == nil {
			out[i], _ = framework.NewPodInfo(p)
		}
	}
	return out
}

func podsOf(ni *framework.NodeInfo) []*corev1.Pod {
	out := make([]*corev1.Pod, len(ni.Pods))
	for i, pi := range ni.Pods {
		out[i] = pi.GetPod()
	}
	return out
}
