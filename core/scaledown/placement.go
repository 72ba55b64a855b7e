package scaledown

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tidal-autoscaler/tidal/simulator"
)

// kind is a kind of pod, as placementKey sets them apart: the nodes whose
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
	p.kindKey = placementKey(p.kindKey[:0], gc.Pod)
	k, ok := p.kinds[string(p.kindKey)]
	if !ok {
		k = &kind{nodes: admitting(gc.Pod, p.in.Checker.Snapshot().Infos())}
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

// placementKey appends to b what sets apart pods that the same nodes refuse
// for reasons other than room: what admitting reads, the tolerations
// (without tolerationSeconds, which no scheduling check reads), the node
// selector and the required node affinity. Replicas of a workload share a
// key. Each string is written with its length first.
func placementKey(b []byte, p *corev1.Pod) []byte {
	s := p.Spec
	field := func(v string) {
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	for _, t := range s.Tolerations {
		field(t.Key)
		field(string(t.Operator))
		field(t.Value)
		field(string(t.Effect))
	}
	b = append(b, '|')
	if len(s.NodeSelector) > 0 {
		for _, k := range slices.Sorted(maps.Keys(s.NodeSelector)) {
			field(k)
			field(s.NodeSelector[k])
		}
	}
	if s.Affinity != nil && s.Affinity.NodeAffinity != nil && s.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		raw, err := json.Marshal(s.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
		if err != nil {
			// Unreachable for API objects; a kind of its own.
			raw = []byte(string(p.UID) + "/" + p.Namespace + "/" + p.Name)
		}
		b = append(b, '|')
		field(string(raw))
	}
	return b
}

// admitting keeps the nodes whose taints the pod tolerates and whose labels
// match its node selector and required node affinity. It only narrows the
// search: the scheduler's Filter plugins still judge every placement.
func admitting(p *corev1.Pod, nodes []fwk.NodeInfo) []fwk.NodeInfo {
	affinity := nodeaffinity.GetRequiredNodeAffinity(p)
	out := make([]fwk.NodeInfo, 0, len(nodes))
	for _, ni := range nodes {
		n := ni.Node()
		if ok, err := affinity.Match(n); err != nil || !ok {
			continue
		}
		_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, p.Spec.Tolerations, func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false)
		if !untolerated {
			out = append(out, ni)
		}
	}
	return out
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
