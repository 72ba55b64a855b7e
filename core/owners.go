package core

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// owners looks up the controllers of the candidates' pods (of the kinds a
// drain may move) in the informers: the plan reads them as data.
func (ob *observer) owners(snap *simulator.Snapshot, candidates []scaledown.Candidate) scaledown.Owners {
	out := scaledown.Owners{Kinds: scaledown.ControllerKinds(), Existing: map[scaledown.OwnerKey]bool{}}
	for _, c := range candidates {
		ni := snap.NodeInfo(c.Name)
		if ni == nil {
			continue
		}
		for _, pi := range ni.GetPods() {
			p := pi.GetPod()
			ref := metav1.GetControllerOf(p)
			if ref == nil || !out.Kinds[ref.Kind] {
				continue
			}
			key := scaledown.OwnerKey{Kind: ref.Kind, Namespace: p.Namespace, Name: ref.Name}
			if _, seen := out.Existing[key]; !seen {
				out.Existing[key], _ = ob.ownerExists(p.Namespace, *ref)
			}
		}
	}
	return out
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
