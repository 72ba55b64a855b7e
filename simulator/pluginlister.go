package simulator

import (
	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// pluginLister is the snapshot as the checker's framework lists it. While
// a pod with required pod affinity or anti-affinity terms is PreFiltered
// (narrow), List serves only the nodes holding a pod one of its terms may
// select (Snapshot.affinityNodes) rather than every node, so the inter-pod
// affinity plugin counts the pods that match the pod's terms from those
// nodes alone. Its state is the same: it sums, over the nodes listed, the
// pods matching the terms, which the other nodes do not hold; the
// existing pods' anti-affinity it reads from
// HavePodsWithRequiredAntiAffinityList, which stays whole.
//
// Of the other PreFilter plugins of the default profile, only topology
// spread reads the node list, and only for a pod with a DoNotSchedule
// constraint (the profile's default constraints are ScheduleAnyway):
// such a pod is never narrowed.
type pluginLister struct {
	fwk.SharedLister
	snapshot *Snapshot
	// only is what List serves while narrowed is set.
	only     []fwk.NodeInfo
	narrowed bool
}

func newPluginLister(s *Snapshot) *pluginLister {
	return &pluginLister{SharedLister: s, snapshot: s}
}

// NodeInfos implements fwk.SharedLister.
func (l *pluginLister) NodeInfos() fwk.NodeInfoLister {
	return narrowedNodes{NodeInfoLister: l.SharedLister.NodeInfos(), l: l}
}

// narrow makes List serve the nodes pod's affinity terms may select, when
// that is all the PreFilter plugins read of the list for pod; widen ends
// it.
func (l *pluginLister) narrow(pod *corev1.Pod) {
	if !narrows(pod) {
		return
	}
	l.only, l.narrowed = l.snapshot.affinityNodes(pod)
}

// narrows tells whether the lister narrows for pod: it has pod affinity
// or anti-affinity, and no topology spread constraint the Filter enforces.
func narrows(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	return a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil) && !hardSpread(pod)
}

func (l *pluginLister) widen() { l.only, l.narrowed = nil, false }

type narrowedNodes struct {
	fwk.NodeInfoLister
	l *pluginLister
}

func (n narrowedNodes) List() ([]fwk.NodeInfo, error) {
	if n.l.narrowed {
		return n.l.only, nil
	}
	return n.NodeInfoLister.List()
}
