package simulator

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// podLabels indexes the snapshot's pods by label, for the label keys that
// pod affinity terms ask for: for each such key, how many pods of each
// namespace and value each node holds. A key is indexed the first time a
// term asks for it (one pass over every pod) and kept in step with every
// change of the snapshot after that, forks and reverts included.
type podLabels map[string]labelNodes

// labelNodes counts, for one label key, the pods carrying it on each node,
// by namespace and value.
type labelNodes map[nsValue]map[*framework.NodeInfo]int32

type nsValue struct{ namespace, value string }

// track counts pod on ni (sign 1) or no longer (sign -1).
func (ix podLabels) track(pod *corev1.Pod, ni *framework.NodeInfo, sign int) {
	for key, nodes := range ix {
		if v, ok := pod.Labels[key]; ok {
			nodes.add(nsValue{pod.Namespace, v}, ni, int32(sign))
		}
	}
}

func (l labelNodes) add(k nsValue, ni *framework.NodeInfo, n int32) {
	nodes := l[k]
	if nodes == nil {
		nodes = map[*framework.NodeInfo]int32{}
		l[k] = nodes
	}
	if nodes[ni] += n; nodes[ni] <= 0 {
		delete(nodes, ni)
		if len(nodes) == 0 {
			delete(l, k)
		}
	}
}

// labelKey returns the index of key, indexing every pod of the snapshot the
// first time.
func (s *Snapshot) labelKey(key string) labelNodes {
	if l, ok := s.labels[key]; ok {
		return l
	}
	l := labelNodes{}
	for _, ni := range s.infos {
		for _, pi := range ni.GetPods() {
			pod := pi.GetPod()
			if v, ok := pod.Labels[key]; ok {
				l.add(nsValue{pod.Namespace, v}, ni.(*framework.NodeInfo), 1)
			}
		}
	}
	s.labels[key] = l
	return l
}

// termScope is where the pods an affinity term can select are found: in
// namespaces (any, when nil), with label key set to one of values (any
// value, when nil). none tells that the term selects no pod.
type termScope struct {
	namespaces sets.Set[string]
	key        string
	values     []string
	none       bool
}

// scopeOf reads t, a term as framework.NewPodInfo parses it from the pod
// (its namespace selector not merged into its namespaces), the way the
// inter-pod affinity plugin matches it (fwk.AffinityTerm.Matches): a pod
// matches when its namespace is one of t's namespaces or t's namespace
// selector selects it, and its labels match t's selector. False when the
// selector asks for no label to be present (empty, or only NotIn,
// DoesNotExist, !=): such a term may select pods anywhere.
func scopeOf(t fwk.AffinityTerm) (termScope, bool) {
	reqs, selectable := t.Selector.Requirements()
	if !selectable {
		// labels.Nothing(): a term without a label selector.
		return termScope{none: true}, true
	}
	var sc termScope
	if _, nsSelectable := t.NamespaceSelector.Requirements(); !nsSelectable {
		// No namespace selector: the term's namespaces (the pod's own
		// when it names none) are all it covers. With one, the plugin
		// adds the namespaces it selects, or any namespace when empty.
		sc.namespaces = t.Namespaces
	}
	found := false
	for _, r := range reqs {
		switch r.Operator() {
		case selection.In, selection.Equals, selection.DoubleEquals:
			sc.key, sc.values = r.Key(), r.ValuesUnsorted()
			return sc, true
		case selection.Exists, selection.GreaterThan, selection.LessThan:
			if !found {
				sc.key, found = r.Key(), true
			}
		}
	}
	return sc, found
}

// nodesIn adds to seen the nodes holding a pod in sc.
func (s *Snapshot) nodesIn(sc termScope, seen map[*framework.NodeInfo]struct{}) {
	if sc.none {
		return
	}
	l := s.labelKey(sc.key)
	if sc.namespaces != nil && sc.values != nil {
		for ns := range sc.namespaces {
			for _, v := range sc.values {
				for ni := range l[nsValue{ns, v}] {
					seen[ni] = struct{}{}
				}
			}
		}
		return
	}
	for k, nodes := range l {
		if sc.namespaces != nil && !sc.namespaces.Has(k.namespace) {
			continue
		}
		if sc.values != nil && !slices.Contains(sc.values, k.value) {
			continue
		}
		for ni := range nodes {
			seen[ni] = struct{}{}
		}
	}
}

// affinityNodes lists the nodes holding a pod that one of pod's required
// affinity or anti-affinity terms may select, in no particular order; false
// when a term may select pods on any node (see scopeOf) or does not parse.
func (s *Snapshot) affinityNodes(pod *corev1.Pod) ([]fwk.NodeInfo, bool) {
	affinity, err := fwk.GetAffinityTerms(pod, fwk.GetPodAffinityTerms(pod.Spec.Affinity))
	if err != nil {
		return nil, false
	}
	anti, err := fwk.GetAffinityTerms(pod, fwk.GetPodAntiAffinityTerms(pod.Spec.Affinity))
	if err != nil {
		return nil, false
	}
	scopes := make([]termScope, 0, len(affinity)+len(anti))
	for _, t := range append(affinity, anti...) {
		sc, ok := scopeOf(t)
		if !ok {
			return nil, false
		}
		scopes = append(scopes, sc)
	}
	seen := map[*framework.NodeInfo]struct{}{}
	for _, sc := range scopes {
		s.nodesIn(sc, seen)
	}
	out := make([]fwk.NodeInfo, 0, len(seen))
	for ni := range seen {
		out = append(out, ni)
	}
	return out, true
}
