package core

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
)

// Decisions is what one iteration of the node loop concluded, as plain
// data: for each pending pod whether and where the cluster grows for it
// and why not elsewhere, for each node of a group whether it can go and
// what keeps it. `tidal explain` and `tidal simulate` print it.
type Decisions struct {
	Time string `json:"time"`
	// Healthy is false when the cluster was too unhealthy to scale; then
	// HealthReason says why and nothing else was decided.
	Healthy      bool               `json:"healthy"`
	HealthReason string             `json:"healthReason,omitempty"`
	ScaleUp      ScaleUpDecisions   `json:"scaleUp"`
	ScaleDown    ScaleDownDecisions `json:"scaleDown"`
	// Replacing are the nodes being replaced, and why.
	Replacing  []ReplacingEntry `json:"replacing,omitempty"`
	NodeGroups []NodeGroupState `json:"nodeGroups"`
	// NodeGroupOfNode maps the name of each node of a node group to it.
	NodeGroupOfNode map[string]string `json:"nodeGroupOfNode"`
}

// ScaleUpDecisions are the scale-up decision's conclusions.
type ScaleUpDecisions struct {
	// Pending are the pods waiting for a node, as namespace/name.
	Pending []string `json:"pending"`
	// Expendable, TooYoung and FitExisting count pending pods that do not
	// call for a scale-up: below the priority cutoff, younger than
	// --new-pod-scale-up-delay, or fitting on existing or upcoming nodes.
	Expendable  int              `json:"expendable"`
	TooYoung    int              `json:"tooYoung"`
	FitExisting int              `json:"fitExisting"`
	ScaleUps    []ScaleUpChoice  `json:"scaleUps"`
	NoScaleUp   []NoScaleUpGroup `json:"noScaleUp"`
	// Awaiting maps pods that fit on requested nodes not yet ready to
	// those nodes' group.
	Awaiting map[string]string `json:"awaiting,omitempty"`
	// Refused names the groups that refused to grow when asked; the
	// decisions above are the last ones, made without them.
	Refused []string `json:"refused,omitempty"`
}

// ScaleUpChoice is one node group grown: from and to which size, for which
// pods, what each node group that could host them offered, and how the
// expander chose.
type ScaleUpChoice struct {
	NodeGroup string           `json:"nodeGroup"`
	From      int              `json:"from"`
	To        int              `json:"to"`
	Nodes     int              `json:"nodes"`
	Pods      []string         `json:"pods"`
	Balanced  bool             `json:"balanced,omitempty"`
	Options   []GroupOption    `json:"options"`
	Expander  []ExpanderChoice `json:"expander,omitempty"`
	// Rejected says why each node group that could not host the pods
	// cannot.
	Rejected map[string][]string `json:"rejected,omitempty"`
}

// GroupOption is what one node group's estimate offered.
type GroupOption struct {
	NodeGroup string `json:"nodeGroup"`
	Nodes     int    `json:"nodes"`
	Pods      int    `json:"pods"`
}

// ExpanderChoice is one expander strategy's step: the groups it kept.
type ExpanderChoice struct {
	Strategy string   `json:"strategy"`
	Kept     []string `json:"kept"`
}

// NoScaleUpGroup are pods alike that no node group can help, with each
// node group's reasons (the scheduler plugins', limits, backoff).
type NoScaleUpGroup struct {
	Pods    []string            `json:"pods"`
	Reasons map[string][]string `json:"reasons"`
}

// ScaleDownDecisions are the scale-down plan's conclusions.
type ScaleDownDecisions struct {
	// Planned is false when scale-down is disabled or was not reached.
	Planned     bool              `json:"planned"`
	Unneeded    []UnneededNode    `json:"unneeded"`
	Unremovable []UnremovableNode `json:"unremovable"`
	// Cooldown, when set, says why no removal starts now.
	Cooldown string `json:"cooldown,omitempty"`
}

// UnneededNode is a node whose pods all fit elsewhere.
type UnneededNode struct {
	Node        string   `json:"node"`
	NodeGroup   string   `json:"nodeGroup"`
	Utilization float64  `json:"utilization"`
	Empty       bool     `json:"empty"`
	PodsToMove  []string `json:"podsToMove,omitempty"`
	// Since is when it was first seen unneeded.
	Since string `json:"since,omitempty"`
}

// UnremovableNode is a node that stays, and what keeps it: Pod names the
// blocking pod, Blocker its reason (a PDB, the safe-to-evict annotation),
// Detail the rest (the PDB's name, the node's annotation).
type UnremovableNode struct {
	Node        string  `json:"node"`
	Reason      string  `json:"reason"`
	Pod         string  `json:"pod,omitempty"`
	Blocker     string  `json:"blocker,omitempty"`
	Detail      string  `json:"detail,omitempty"`
	Utilization float64 `json:"utilization"`
	Message     string  `json:"message"`
}

// NodeGroupState is a node group's sizes and health.
type NodeGroupState struct {
	Name         string `json:"name"`
	Min          int    `json:"min"`
	Max          int    `json:"max"`
	Target       int    `json:"target"`
	Registered   int    `json:"registered"`
	Ready        int    `json:"ready"`
	Upcoming     int    `json:"upcoming"`
	Health       string `json:"health"`
	Reason       string `json:"reason,omitempty"`
	BackoffUntil string `json:"backoffUntil,omitempty"`
}

// LastDecisions is what the last iteration concluded, nil before the
// first or without Options.KeepDecisions.
func (l *NodeLoop) LastDecisions() *Decisions { return l.last.Load() }

// DecisionsOf renders an iteration's report into Decisions.
func DecisionsOf(r *Iteration) *Decisions {
	o := r.observed
	d := &Decisions{Time: o.now.UTC().Format(time.RFC3339), Healthy: r.health.Healthy, HealthReason: r.health.Reason,
		NodeGroupOfNode: map[string]string{}}
	for node, g := range o.groupOfNode {
		if g != "" {
			d.NodeGroupOfNode[node] = g
		}
	}
	d.ScaleUp = scaleUpDecisions(r)
	d.ScaleDown = scaleDownDecisions(r)
	d.Replacing = replacingEntries(r.replacing)
	for _, g := range o.nodeGroups {
		st := groupStatus(g, r.group(g.id))
		d.NodeGroups = append(d.NodeGroups, NodeGroupState{Name: st.Name, Min: st.MinSize, Max: st.MaxSize, Target: st.Target,
			Registered: st.Registered, Ready: st.Ready, Upcoming: st.Upcoming, Health: st.Health, Reason: st.Reason,
			BackoffUntil: st.BackoffTill})
	}
	return d
}

func scaleUpDecisions(r *Iteration) ScaleUpDecisions {
	o := r.observed
	su := ScaleUpDecisions{Expendable: r.expendable, TooYoung: r.young}
	byUID := map[types.UID]*corev1.Pod{}
	for _, p := range o.pending {
		su.Pending = append(su.Pending, podName(p))
		byUID[p.UID] = p
	}
	su.Refused = r.failedGroups
	p := r.plan
	if p == nil {
		return su
	}
	su.FitExisting = p.FitExisting
	for _, u := range p.ScaleUps {
		su.ScaleUps = append(su.ScaleUps, scaleUpChoice(u))
	}
	for _, n := range p.NoScaleUp {
		su.NoScaleUp = append(su.NoScaleUp, NoScaleUpGroup{Pods: podNames(n.Pods), Reasons: n.ByNodeGroup})
	}
	for uid, g := range p.Awaiting {
		if pod := byUID[uid]; pod != nil {
			if su.Awaiting == nil {
				su.Awaiting = map[string]string{}
			}
			su.Awaiting[podName(pod)] = g
		}
	}
	return su
}

func scaleUpChoice(u scaleup.ScaleUp) ScaleUpChoice {
	c := ScaleUpChoice{NodeGroup: u.Group, From: u.From, To: u.To, Nodes: u.To - u.From, Pods: podNames(u.Pods), Balanced: u.Balanced,
		Rejected: u.Rejected}
	for _, e := range u.Estimates {
		c.Options = append(c.Options, GroupOption{NodeGroup: e.Group, Nodes: e.NodeCount, Pods: e.Pods})
	}
	for _, s := range u.Decision.Steps {
		c.Expander = append(c.Expander, ExpanderChoice{Strategy: s.Strategy, Kept: slices.Clone(s.Kept)})
	}
	return c
}

func scaleDownDecisions(r *Iteration) ScaleDownDecisions {
	sd := r.scaleDown
	if sd == nil || sd.plan == nil {
		return ScaleDownDecisions{}
	}
	out := ScaleDownDecisions{Planned: true, Cooldown: sd.cooldown}
	for _, u := range sd.plan.Unneeded {
		n := UnneededNode{Node: u.Node, NodeGroup: u.Group, Utilization: u.Utilization, Empty: u.Empty(),
			PodsToMove: podNames(u.Pods.ToMove)}
		if since, ok := r.unneededSince[u.Node]; ok {
			n.Since = since.UTC().Format(time.RFC3339)
		}
		out.Unneeded = append(out.Unneeded, n)
	}
	for _, u := range slices.Concat(sd.notEvenCandidates, sd.plan.Unremovable) {
		out.Unremovable = append(out.Unremovable, unremovableNode(u))
	}
	return out
}

func unremovableNode(u scaledown.Unremovable) UnremovableNode {
	n := UnremovableNode{Node: u.Node, Reason: string(u.Reason), Detail: u.Detail, Utilization: u.Utilization, Message: u.String()}
	if b := u.Blocker; b != nil {
		n.Blocker, n.Detail = string(b.Reason), b.Detail
		if b.Pod != nil {
			n.Pod = podName(b.Pod)
		}
	}
	return n
}

func podName(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

func podNames(pods []*corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, podName(p))
	}
	return out
}
