package core

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// owners looks up the controllers of the candidates' pods and of the
// pods arriving (of the kinds a drain may move) in the informers: the plan
// reads them as data.
func (ob *observer) owners(snap *simulator.Snapshot, candidates []scaledown.Candidate, arriving []simulator.Placed) scaledown.Owners {
	out := scaledown.Owners{Kinds: scaledown.ControllerKinds(), Existing: map[scaledown.OwnerKey]bool{}}
	for _, c := range candidates {
		if ni := snap.NodeInfo(c.Name); ni != nil {
			for _, pi := range ni.GetPods() {
				ob.lookUpOwner(out, pi.GetPod())
			}
		}
	}
	for _, a := range arriving {
		ob.lookUpOwner(out, a.Info.GetPod())
	}
	return out
}

// lookUpOwner adds what the informers know of p's controller to out.
func (ob *observer) lookUpOwner(out scaledown.Owners, p *corev1.Pod) {
	ref := metav1.GetControllerOf(p)
	if ref == nil || !out.Kinds[ref.Kind] {
		return
	}
	key := scaledown.OwnerKey{Kind: ref.Kind, Namespace: p.Namespace, Name: ref.Name}
	if _, seen := out.Existing[key]; !seen {
		out.Existing[key], _ = ob.ownerExists(p.Namespace, *ref)
	}
}

// ownerExists looks a pod's controller up in the informers.
func (ob *observer) ownerExists(ns string, ref metav1.OwnerReference) (exists, known bool) {
	var err error
	switch ref.Kind {
	case "ReplicaSet":
		_, err = ob.replicaSets.ReplicaSets(ns).Get(ref.Name)
	case "ReplicationController":
		_, err = ob.rcs.ReplicationControllers(ns).Get(ref.Name)
	case "StatefulSet":
		_, err = ob.statefulSets.StatefulSets(ns).Get(ref.Name)
	case "Job":
		_, err = ob.jobs.Jobs(ns).Get(ref.Name)
	default:
		return false, false
	}
	return err == nil, true
}
