package simulator

import (
	"encoding/binary"
	"encoding/json"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
)

// PlacementKey appends to b what sets apart pods that the same nodes refuse
// for reasons other than room: what Admitting reads, the tolerations
// (without tolerationSeconds, which no scheduling check reads), the node
// selector and the required node affinity. Replicas of a workload share a
// key. Each string is written with its length first.
func PlacementKey(b []byte, p *corev1.Pod) []byte {
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

// Admitting keeps, in order, the nodes whose taints the pod tolerates and
// whose labels match its node selector and required node affinity: the
// nodes the scheduler's TaintToleration and NodeAffinity Filter plugins
// do not refuse, read as they read them. It only narrows a search: the
// Filter plugins still judge every placement.
func Admitting(p *corev1.Pod, nodes []fwk.NodeInfo) []fwk.NodeInfo {
	affinity := nodeaffinity.GetRequiredNodeAffinity(p)
	comparisons := utilfeature.DefaultFeatureGate.Enabled(features.TaintTolerationComparisonOperators)
	out := make([]fwk.NodeInfo, 0, len(nodes))
	for _, ni := range nodes {
		n := ni.Node()
		if ok, err := affinity.Match(n); err != nil || !ok {
			continue
		}
		_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, p.Spec.Tolerations, func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, comparisons)
		if !untolerated {
			out = append(out, ni)
		}
	}
	return out
}
