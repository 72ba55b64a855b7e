package core

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// nodeOwners are the controllers of a node's pods (of the kinds a drain
// may move), as they were at one generation of its NodeInfo.
type nodeOwners struct {
	info       fwk.NodeInfo
	generation int64
	keys       []scaledown.OwnerKey
}

// owners looks up the controllers of the candidates' pods and of the
// pods arriving (of the kinds a drain may move) in the informers: the plan
// reads them as data. Which controllers a node's pods have is kept from
// one iteration to the next while its NodeInfo and generation stay (its
// pods are then the same); whether each controller exists is looked up
// afresh every time.
func (ob *observer) owners(snap *simulator.Snapshot, candidates []scaledown.Candidate, arriving []simulator.Placed) scaledown.Owners {
	out := scaledown.Owners{Kinds: scaledown.ControllerKinds(), Existing: map[scaledown.OwnerKey]bool{}}
	if ob.ownerKeys == nil {
		ob.ownerKeys = make(map[string]nodeOwners, len(candidates))
	}
	for _, c := range candidates {
		ni := snap.NodeInfo(c.Name)
		if ni == nil {
			continue
		}
		no, ok := ob.ownerKeys[c.Name]
		if !ok || no.info != ni || no.generation != ni.GetGeneration() {
			no = nodeOwners{info: ni, generation: ni.GetGeneration(), keys: ownerKeysOf(ni, out.Kinds)}
		}
		ob.ownerKeys[c.Name] = no
		for _, key := range no.keys {
			ob.lookUp(out, key)
		}
	}
	// The scale-down and consolidation ask for different candidates: what
	// one kept stays for the other, and only nodes gone are forgotten.
	for name, no := range ob.ownerKeys {
		if ni := snap.NodeInfo(name); ni == nil || no.info != ni {
			delete(ob.ownerKeys, name)
		}
	}
	for _, a := range arriving {
		if key, ok := ownerKeyOf(a.Info.GetPod(), out.Kinds); ok {
			ob.lookUp(out, key)
		}
	}
	return out
}

// ownerKeysOf are the controllers of ni's pods of the given kinds, each
// once.
func ownerKeysOf(ni fwk.NodeInfo, kinds map[string]bool) []scaledown.OwnerKey {
	var keys []scaledown.OwnerKey
	seen := map[scaledown.OwnerKey]bool{}
	for _, pi := range ni.GetPods() {
		if key, ok := ownerKeyOf(pi.GetPod(), kinds); ok && !seen[key] {
			seen[key] = true
			keys = append(keys, key)
		}
	}
	return keys
}

// ownerKeyOf is p's controller, when it is of one of the kinds.
func ownerKeyOf(p *corev1.Pod, kinds map[string]bool) (scaledown.OwnerKey, bool) {
	ref := metav1.GetControllerOfNoCopy(p)
	if ref == nil || !kinds[ref.Kind] {
		return scaledown.OwnerKey{}, false
	}
	return scaledown.OwnerKey{Kind: ref.Kind, Namespace: p.Namespace, Name: ref.Name}, true
}

// lookUp adds what the informers know of the controller key to out.
func (ob *observer) lookUp(out scaledown.Owners, key scaledown.OwnerKey) {
	if _, seen := out.Existing[key]; !seen {
		out.Existing[key], _ = ob.ownerExists(key.Namespace, metav1.OwnerReference{Kind: key.Kind, Name: key.Name})
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
