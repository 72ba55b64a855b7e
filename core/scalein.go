package core

import (
	"slices"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/core/scalein"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// scaleInView is the node loop's last view of the nodes for the pod loop's
// scale-ins: each node's utilization as scale-down computed it, and whether
// scale-down could remove it once its pods fit elsewhere.
type scaleInView struct {
	nodes []scalein.Node
	// toMove are the pods of each removable node that a drain would move,
	// as the plan saw them (the nodes' Pods are filled from it when read).
	toMove map[string][]podRef
	at     time.Time
}

// podRef names a pod the plan saw.
type podRef struct {
	namespace, name string
	uid             types.UID
}

// ScaleInNodes returns the nodes as the last scale-down plan saw them, for
// choosing which replicas a scale-in removes, and when the plan was made;
// nil when no plan was made yet (or scale-down is disabled). The pods of
// removable nodes are those of the plan that still exist now: a scale-in
// soon after another, before the next plan, must not count the replicas
// the first one removed as pods still to move. Safe to call from any
// goroutine.
func (l *NodeLoop) ScaleInNodes() ([]scalein.Node, time.Time) { return l.d.scaleIn.nodes() }

// scaleIns keeps the last scale-in view and reads what of it still holds.
type scaleIns struct {
	pods corelisters.PodLister
	view atomic.Pointer[scaleInView]
}

func (s *scaleIns) nodes() ([]scalein.Node, time.Time) {
	v := s.view.Load()
	if v == nil {
		return nil, time.Time{}
	}
	out := slices.Clone(v.nodes)
	for i := range out {
		for _, ref := range v.toMove[out[i].Name] {
			if s.podExists(ref) {
				out[i].Pods = append(out[i].Pods, ref.uid)
			}
		}
	}
	return out, v.at
}

// podExists reports whether the pod is still in the informer, the same pod
// and not being deleted. A pod the lister cannot answer for counts as
// existing: the node then looks fuller, never emptier, than it is.
func (s *scaleIns) podExists(ref podRef) bool {
	p, err := s.pods.Pods(ref.namespace).Get(ref.name)
	switch {
	case apierrors.IsNotFound(err):
		return false
	case err != nil:
		return true
	}
	return p.UID == ref.uid && p.DeletionTimestamp == nil
}

// publish builds the scale-in view from the plan over the snapshot snap:
// every node of the snapshot with its utilization (ig: what it leaves
// out); the candidates not kept by their group's minimum, a blocking pod
// or unreadiness are removable, with the pods a drain would move.
func (s *scaleIns) publish(o *observation, plan *scaledown.Plan, candidates []scaledown.Candidate, snap *simulator.Snapshot, ig scaledown.Ignored) {
	util := map[string]float64{}
	kept := map[string]bool{}
	for _, u := range plan.Unremovable {
		util[u.Node] = u.Utilization
		switch u.Reason {
		case scaledown.NodeGroupMinSizeReached, scaledown.BlockedByPod, scaledown.ScaleDownUnreadyDisabled, scaledown.UnexpectedError:
			kept[u.Node] = true
		}
	}
	for _, u := range plan.Unneeded {
		util[u.Node] = u.Utilization
	}
	group := map[string]string{}
	for _, c := range candidates {
		group[c.Name] = c.Group
	}
	nodes := make([]scalein.Node, 0, len(o.nodes))
	toMove := map[string][]podRef{}
	for _, node := range o.nodes {
		name := node.Name
		ni := snap.NodeInfo(name)
		if ni == nil {
			continue
		}
		n := scalein.Node{Name: name, Group: o.groupOfNode[name], Utilization: scaledown.Utilization(ni, ig)}
		if u, ok := util[name]; ok {
			n.Utilization = u
		}
		if _, candidate := group[name]; candidate && !kept[name] {
			n.Removable = true
			for _, pi := range ni.Pods {
				if p := pi.GetPod(); scaledown.MustMove(p, o.now) {
					toMove[name] = append(toMove[name], podRef{namespace: p.Namespace, name: p.Name, uid: p.UID})
				}
			}
		}
		nodes = append(nodes, n)
	}
	s.view.Store(&scaleInView{nodes: nodes, toMove: toMove, at: o.now})
}
