package core

import (
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/core/scalein"
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
func (l *NodeLoop) ScaleInNodes() ([]scalein.Node, time.Time) {
	v := l.scaleIn.Load()
	if v == nil {
		return nil, time.Time{}
	}
	out := slices.Clone(v.nodes)
	for i := range out {
		for _, ref := range v.toMove[out[i].Name] {
			if l.podExists(ref) {
				out[i].Pods = append(out[i].Pods, ref.uid)
			}
		}
	}
	return out, v.at
}

// podExists reports whether the pod is still in the informer, the same pod
// and not being deleted. A pod the lister cannot answer for counts as
// existing: the node then looks fuller, never emptier, than it is.
func (l *NodeLoop) podExists(ref podRef) bool {
	p, err := l.pods.Pods(ref.namespace).Get(ref.name)
	switch {
	case apierrors.IsNotFound(err):
		return false
	case err != nil:
		return true
	}
	return p.UID == ref.uid && p.DeletionTimestamp == nil
}

// publishScaleIn builds the scale-in view from the plan: every node of the
// snapshot with its utilization; the candidates not kept by their group's
// minimum, a blocking pod or unreadiness are removable, with the pods a
// drain would move.
func (l *NodeLoop) publishScaleIn(o *observation, plan *scaledown.Plan, candidates []scaledown.Candidate) {
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
	ig := scaledown.Ignored{DaemonSets: l.opts.ScaleDown.IgnoreDaemonSetsUtilization, MirrorPods: l.opts.ScaleDown.IgnoreMirrorPodsUtilization}
	snap := l.checker.Snapshot()
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
	l.scaleIn.Store(&scaleInView{nodes: nodes, toMove: toMove, at: o.now})
}
