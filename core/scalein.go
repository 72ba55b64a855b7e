package core

import (
	"slices"
	"time"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/core/scalein"
)

// scaleInView is the node loop's last view of the nodes for the pod loop's
// scale-ins: each node's utilization as scale-down computed it, and whether
// scale-down could remove it once its pods fit elsewhere.
type scaleInView struct {
	nodes []scalein.Node
	at    time.Time
}

// ScaleInNodes returns the nodes as the last scale-down plan saw them, for
// choosing which replicas a scale-in removes, and when the plan was made;
// nil when no plan was made yet (or scale-down is disabled). The slice is
// shared: read it only. Safe to call from any goroutine.
func (l *NodeLoop) ScaleInNodes() ([]scalein.Node, time.Time) {
	v := l.scaleIn.Load()
	if v == nil {
		return nil, time.Time{}
	}
	return v.nodes, v.at
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
					n.Pods = append(n.Pods, p.UID)
				}
			}
			slices.Sort(n.Pods)
		}
		nodes = append(nodes, n)
	}
	l.scaleIn.Store(&scaleInView{nodes: nodes, at: o.now})
}
