package scaleup

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tidal-autoscaler/tidal/simulator"
)

// uniqueHostnames tells whether no two nodes share a hostname label: the
// ready nodes of list and the others of the snapshot.
func uniqueHostnames(list nodeList, others []fwk.NodeInfo) bool {
	if !list.unique {
		return false
	}
	seen := make(map[string]bool, len(others))
	for _, ni := range others {
		h, ok := ni.Node().Labels[corev1.LabelHostname]
		if !ok {
			continue
		}
		if seen[h] || list.hosts[h] {
			return false
		}
		seen[h] = true
	}
	return true
}

// isLocal tells whether a node takes pod depends on that node
// alone: pod is local, its own anti-affinity is per node, and so is that
// of the pods in the snapshot.
func (r *filterReuse) isLocal(snap *simulator.Snapshot, pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	ownAnti := a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
	return local(pod) && (r.uniqueHosts || !ownAnti) && r.othersLocal(snap, pod)
}

// othersLocal tells that every required anti-affinity term of the pods in
// the snapshot that selects pod keeps it off the term's own node only
// (topology by hostname, hostnames unique), so that whether a node takes
// pod depends on that node's pods alone. A term with a namespace selector
// is taken to select it (the namespaces' labels are not read here).
func (r *filterReuse) othersLocal(snap *simulator.Snapshot, pod *corev1.Pod) bool {
	nodes, err := snap.NodeInfos().HavePodsWithRequiredAntiAffinityList()
	if err != nil {
		return false
	}
	for _, ni := range nodes {
		for _, pi := range ni.GetPodsWithRequiredAntiAffinity() {
			spec := pi.GetPod().Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
			terms := pi.GetRequiredAntiAffinityTerms()
			if len(terms) != len(spec) {
				return false
			}
			for i, t := range terms {
				selects := (spec[i].NamespaceSelector != nil || t.Namespaces.Has(pod.Namespace)) && t.Selector.Matches(labels.Set(pod.Labels))
				if selects && (t.TopologyKey != corev1.LabelHostname || !r.uniqueHosts) {
					return false
				}
			}
		}
	}
	return true
}

// local tells whether a node takes pod depends on that node alone
// (its labels, taints and allocatable, and its pods: their requests,
// count, host ports, labels and anti-affinity), and placing it makes nodes
// only less suitable: no pod affinity, required anti-affinity only per
// hostname and within namespaces it names, no topology spread, no volume
// but those a node does not count (projected, config map, secret, empty
// dir, downward API), no resource claims.
func local(pod *corev1.Pod) bool {
	if a := pod.Spec.Affinity; a != nil {
		if a.PodAffinity != nil {
			return false
		}
		if anti := a.PodAntiAffinity; anti != nil {
			for _, t := range anti.RequiredDuringSchedulingIgnoredDuringExecution {
				if t.TopologyKey != corev1.LabelHostname || t.NamespaceSelector != nil {
					return false
				}
			}
		}
	}
	return len(pod.Spec.TopologySpreadConstraints) == 0 && len(pod.Spec.ResourceClaims) == 0 && simulator.PlainVolumes(pod)
}
