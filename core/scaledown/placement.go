package scaledown

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tidal-autoscaler/tidal/simulator"
)

// kind is a kind of pod, as simulator.PlacementKey sets them apart: the
// nodes whose taints and labels admit it, in the order of the snapshot
// when the plan started (those never change during a plan, so scans skip
// nodes that would refuse the kind anyway), and where its last pod fitted.
// With a Reuse, list hashes the nodes and ids are their numbers.
type kind struct {
	key   string
	nodes []fwk.NodeInfo
	hint  int
	list  uint64
	ids   []int32
}

// kindOf is the kind of pod, made when first asked for.
func (p *planner) kindOf(pod *corev1.Pod) *kind {
	p.kindKey = simulator.PlacementKey(p.kindKey[:0], pod)
	if k, ok := p.kinds[string(p.kindKey)]; ok {
		return k
	}
	k := &kind{key: string(p.kindKey), nodes: simulator.Admitting(pod, p.base)}
	if p.run != nil {
		k.list = fnvOffset
		k.ids = make([]int32, len(k.nodes))
		for i, ni := range k.nodes {
			name := ni.Node().Name
			k.list = fnvAdd(k.list, name)
			k.ids[i] = p.run.next.ids[name]
		}
	}
	p.kinds[k.key] = k
	return k
}

// destination finds a node for a moved pod among the nodes left that admit
// its kind, starting where the kind's last pod fitted. A removal being
// recorded notes the kind and every node looked at.
func (p *planner) destination(ctx context.Context, gc *simulator.GroupCheck) string {
	k := p.kindOf(gc.Pod)
	rec := p.run != nil && p.run.rec != nil
	if rec {
		p.run.use(k)
	}
	n := len(k.nodes)
	if n == 0 || gc.Status != nil {
		return ""
	}
	start := min(k.hint, n-1)
	for i := 0; i < n; i++ {
		idx := (start + i) % n
		ni := k.nodes[idx]
		if rec {
			p.run.noteRead(k.ids[idx])
		}
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
