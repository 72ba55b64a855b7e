// Package scaleup decides scale-ups: which pending pods the cluster cannot
// place, which node groups would help them, which group to grow and by how
// many nodes. Decide is a pure function of its input (the snapshot it
// changes is restored before it returns); the node loop gathers the input
// and carries the plan out.
package scaleup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tidal-autoscaler/tidal/estimator"
	"github.com/tidal-autoscaler/tidal/expander"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// Group is a node group as the decision sees it.
type Group struct {
	ID       string
	Template *simulator.NodeTemplate
	Min, Max int
	// Target is the cloud's target size; Upcoming counts requested nodes
	// not yet registered and Ready (they count as template copies).
	Target, Upcoming int
	// Starting names the group's registered nodes among Upcoming (not yet
	// able to take pods: unready, or behind a startup taint): the first
	// upcoming copies stand for them, with the pods nominated to them.
	Starting []string
	// Unavailable, when set, says why the group may not grow now (backed
	// off, health); it is reported to the pods it could have helped.
	Unavailable string
}

// Input is everything a scale-up decision needs.
type Input struct {
	// Checker holds the snapshot: the nodes and the pods bound to them.
	Checker *simulator.Checker
	// NotReady names the nodes that cannot run pods yet: unready, or with
	// a startup taint. Pending pods are not placed on them; a group's
	// Upcoming counts those of its nodes still expected to become ready,
	// as template copies.
	NotReady map[string]bool
	// Pending are the unschedulable pods, grouped, most important first.
	Pending []*simulator.PodGroup
	// Cleared maps pending pods whose nomination tidal set was cleared to
	// the node it named. The scheduler clears a nomination each time it
	// finds no node for the pod, as it does while the node still starts;
	// such a pod is placed on that node (or the copy standing for it)
	// first while it fits there, so it is nominated to the same node again
	// rather than to the first node with room for its kind.
	Cleared map[types.UID]string
	// Waiting maps pending pods to the group whose requested nodes they
	// wait for (a last decision asked that group's nodes for them, or
	// placed them on its upcoming nodes). Such a pod is placed on that
	// group's upcoming copies before any pod is placed on the copies at
	// large, so that pods the last decision planned on another group's
	// nodes do not take the room asked for it, and the same pods never ask
	// for nodes again while those come.
	Waiting map[types.UID]string
	Groups  []Group
	Limits  Limits
	Chain   *expander.Chain
	// ExpanderContext is passed to the expander chain.
	ExpanderContext *expander.Context
	// BalanceSimilar splits a scale-up across groups alike but for zone.
	BalanceSimilar bool
	// BalancingIgnoredLabels are label keys ignored when comparing groups,
	// besides the built-in ones.
	BalancingIgnoredLabels []string
	// BalancingLabels, when set, are the only comparison: groups whose
	// templates carry each of these labels with equal values are similar
	// (--balancing-label).
	BalancingLabels []string
	// MaxRounds bounds how many scale-ups one decision makes; 0 means 10.
	MaxRounds int
	// MaxGroupBinpacking bounds each group's estimate within the decision
	// (--max-nodegroup-binpacking-duration); zero means no bound of its own.
	MaxGroupBinpacking time.Duration
	// Placement chooses the node count the scale-ups ask for: the plan's
	// packing (the default), or what the scheduler's own placement needs.
	Placement Placement
	// greedyOnly keeps the rounds' plan without comparing packings (to
	// measure what the comparison gains).
	greedyOnly bool
}

// Plan is a decision.
type Plan struct {
	ScaleUps []ScaleUp
	// FitExisting counts pending pods that fit on existing or upcoming nodes.
	FitExisting int
	// OnExisting are the pending pods that fit on the free capacity of
	// existing, ready nodes, with the node each went on: the scheduler is
	// about to put them there, and scale-down must picture them there.
	OnExisting []simulator.Placed
	// Awaiting maps the UIDs of pending pods that fit on upcoming nodes
	// (requested, not yet Ready) to those nodes' group.
	Awaiting map[types.UID]string
	// AwaitingOn maps those of them that fit on a registered node still
	// starting (Group.Starting) to that node: where to nominate them.
	AwaitingOn map[types.UID]string
	// NoScaleUp lists the pods no group can help, by pod group, with why.
	NoScaleUp []NoScaleUp
	// Skipped counts pods not decided because the deadline passed, and
	// Unfinished lists their groups: the next decision should take them
	// first.
	Skipped    int
	Unfinished []*simulator.PodGroup
	// Timings of the phases.
	Timings Timings
	// ReusedGroups counts the pod groups whose placements on existing and
	// upcoming nodes were taken from the last decision (DecideFrom), and
	// ResumedGroups those whose first placements were, the search for
	// the others resuming after them.
	ReusedGroups, ResumedGroups int
	// CarriedChecks counts the pod groups' checks (PreFilter states) taken
	// from an earlier one and brought up to date with the pods changed
	// since, rather than made over every pod (groups with pod affinity or
	// anti-affinity, see simulator.BaseCheck).
	CarriedChecks int
	// Planner names the whole-plan packing that replaced the rounds' plan
	// with fewer nodes, empty when the rounds' plan stands; GreedyNodes is
	// what the rounds planned, when packings were compared.
	Planner     string
	GreedyNodes int
	// SchedulerNodes is how many new nodes the scheduler's default scoring
	// needs to place every pod the scale-ups help, all nodes there at once,
	// and PlanNodes the plan's own count then; zero when not measured (see
	// schedulerPlacement). With PlacementScheduler the scale-ups ask for
	// SchedulerNodes.
	SchedulerNodes, PlanNodes int
	// hadOptions is set when some round offered the expander a choice.
	hadOptions bool
	// keptChecks counts the groups reused wholly whose check, made to
	// look at the nodes that changed, served the pods they left.
	keptChecks int
}

// ScaleUp grows one group.
type ScaleUp struct {
	Group     string
	From, To  int
	Max       int
	Pods      []*corev1.Pod
	Decision  expander.Decision
	Balanced  bool
	Estimates []EstimateSummary
	// Rejected says, per node group that could not help the pods, why
	// (set by the rounds; a whole-plan packing leaves it empty).
	Rejected map[string][]string
}

// EstimateSummary is what one node group's estimate offered.
type EstimateSummary struct {
	Group     string
	NodeCount int
	Pods      int
}

// NoScaleUp is what no node group can help in a pod group: Pods, those of
// the group's pods that fit no existing or upcoming node and no scale-up of
// this plan (others of the group may have been helped), with the reasons
// per node group, counted (reason → number of node groups).
type NoScaleUp struct {
	Group   *simulator.PodGroup
	Pods    []*corev1.Pod
	Reasons map[string]int
	// ByNodeGroup is the same reasons per node group (node group → its
	// reasons), for explaining one pod.
	ByNodeGroup map[string][]string
}

// Timings are the durations of the decision's phases.
type Timings struct {
	FilterSchedulable time.Duration
	Estimate          time.Duration
	Total             time.Duration
}

// Helped returns, per pod UID, the group that will run it: the group a
// scale-up of this plan grows, or the group whose upcoming nodes it awaits.
func (p *Plan) Helped() map[types.UID]string {
	out := map[types.UID]string{}
	for uid, g := range p.Awaiting {
		out[uid] = g
	}
	for _, s := range p.ScaleUps {
		for _, pod := range s.Pods {
			out[pod.UID] = s.Group
		}
	}
	return out
}

// Decide makes the scale-up decision. The snapshot is restored before it
// returns.
//
// The context's deadline, if any, bounds the decision (--max-binpacking-time):
// filtering pending pods against existing nodes may use half of the time up
// to it. A decision out of time still scales up for what it decided: at
// least one pod group is filtered and one round of estimates is made.
func Decide(ctx context.Context, in Input) (*Plan, error) {
	plan, _, err := DecideFrom(ctx, in, Reuse{unkept: true})
	return plan, err
}

// DecideFrom is Decide, reusing what the decision that returned prev found
// where the change since does not touch it (see Reuse); it returns what
// the next decision may reuse. The plan is the one Decide makes.
func DecideFrom(ctx context.Context, in Input, prev Reuse) (*Plan, Reuse, error) {
	plan, r, err := decide(ctx, in, prev)
	if err != nil {
		return nil, Reuse{}, err
	}
	return plan, r.settled(in.Checker.Snapshot()), nil
}

// decide is DecideFrom but for the Reuse, whose nodes are as they were
// before the snapshot was restored.
func decide(ctx context.Context, in Input, prev Reuse) (*Plan, *filterReuse, error) {
	if in.MaxRounds == 0 {
		in.MaxRounds = 10
	}
	d := &decision{in: in, plan: &Plan{Awaiting: map[types.UID]string{}, AwaitingOn: map[types.UID]string{}}, start: time.Now(),
		planned: map[string]int{}, upcoming: map[string]string{}, starting: map[string]string{}, plannedNodes: map[string]int{}, expander: in.ExpanderContext.Fork()}
	if dl, ok := ctx.Deadline(); ok {
		d.filterDeadline = d.start.Add(dl.Sub(d.start) / 2)
	}
	// Most pending pods are placed by the filter: their lists are grown
	// once, not doubled as they fill.
	n := 0
	for _, g := range in.Pending {
		n += len(g.Pods)
	}
	d.placed, d.plan.OnExisting = make([]simulator.Placed, 0, n), make([]simulator.Placed, 0, n)
	snap := in.Checker.Snapshot()
	snap.Fork()
	defer snap.Revert()
	if err := d.addUpcoming(); err != nil {
		return nil, nil, err
	}
	d.prev = prev
	remaining, err := d.filterSchedulable(ctx)
	if err != nil {
		return nil, nil, err
	}
	d.plan.ReusedGroups, d.plan.ResumedGroups = d.reuse.reused, d.reuse.resumed
	d.plan.Timings.FilterSchedulable = time.Since(d.start)
	b := d.save()
	snap.Fork()
	err = d.rounds(ctx, remaining)
	snap.Revert()
	if err != nil {
		return nil, nil, err
	}
	d.placed = d.placed[:b.placed]
	if err := d.wholePlan(ctx, remaining, b); err != nil {
		return nil, nil, err
	}
	if err := d.schedulerPlacement(ctx, remaining); err != nil {
		return nil, nil, err
	}
	d.plan.CarriedChecks, d.plan.keptChecks = d.reuse.carried, d.reuse.keptChecks
	d.plan.Timings.Total = time.Since(d.start)
	d.plan.Timings.Estimate = d.plan.Timings.Total - d.plan.Timings.FilterSchedulable
	return d.plan, d.reuse, nil
}

type decision struct {
	in    Input
	plan  *Plan
	start time.Time
	// expander is the input's expander context, its ties broken from the
	// seed afresh.
	expander *expander.Context
	// planned counts nodes added to each group by this decision.
	planned map[string]int
	// upcoming maps the names of upcoming nodes' copies to their group;
	// starting those that stand for a registered node to its name.
	upcoming, starting map[string]string
	// plannedNodes maps the names of the nodes this decision's scale-ups
	// add to the index of their scale-up in the plan.
	plannedNodes map[string]int
	// plannedOrder names those nodes in the order they were added.
	plannedOrder []string
	// credited are the pods later rounds placed on known nodes.
	credited []*corev1.Pod
	// filterDeadline ends filtering, leaving time for the estimates.
	filterDeadline time.Time
	// placed are the pods the filter placed, in order.
	placed []simulator.Placed
	// prev is what the last decision's filter found; reuse is this
	// filter's use of it.
	prev  Reuse
	reuse *filterReuse
}

// timedOut tells whether the context's deadline passed.
func timedOut(ctx context.Context) bool { return errors.Is(ctx.Err(), context.DeadlineExceeded) }

// passed tells whether deadline, unless zero, is behind (the clock read as
// the time budget, not as an input of the decision).
func passed(deadline time.Time) bool {
	return !deadline.IsZero() && time.Now().After(deadline)
}

// addUpcoming puts a template copy in the snapshot for every requested node
// not yet ready, so pods that will fit there ask for nothing. The copy of a
// registered node still starting takes the pods nominated to it from it:
// the room they will use is not offered twice.
func (d *decision) addUpcoming() error {
	snap := d.in.Checker.Snapshot()
	for _, g := range d.in.Groups {
		for i := 0; i < g.Upcoming; i++ {
			name := fmt.Sprintf("upcoming-%s-%d", g.ID, i)
			if _, err := g.Template.AddCopy(snap, name); err != nil {
				return fmt.Errorf("node group %s: upcoming node: %w", g.ID, err)
			}
			d.upcoming[name] = g.ID
			if i < len(g.Starting) {
				d.starting[name] = g.Starting[i]
				if err := moveNominated(snap, g.Starting[i], name); err != nil {
					return fmt.Errorf("node group %s: %w", g.ID, err)
				}
			}
		}
	}
	return nil
}

// moveNominated moves the pods nominated to node (not bound to it) onto
// the copy standing for it.
func moveNominated(snap *simulator.Snapshot, node, copyName string) error {
	ni := snap.NodeInfo(node)
	if ni == nil {
		return nil
	}
	var moved []fwk.PodInfo
	for _, pi := range ni.Pods {
		if pi.GetPod().Spec.NodeName == "" {
			moved = append(moved, pi)
		}
	}
	for _, pi := range moved {
		if err := snap.RemovePod(pi.GetPod(), node); err != nil {
			return err
		}
		if err := snap.AddPod(pi, copyName); err != nil {
			return err
		}
	}
	return nil
}

// pending is a pod group with the pods still to place. check, when set,
// is the group's check from the filter, valid but for the pods the filter
// placed after it (from index since of the decision's placed).
type pending struct {
	group *simulator.PodGroup
	pods  []*corev1.Pod
	check *simulator.GroupCheck
	since int
}

// filterSchedulable places pending pods on the free capacity of ready and
// upcoming nodes, keeping them there for the rest of the decision, and
// returns what is left. Ready nodes are filled first, in the pod groups'
// order (as the scheduler will); the upcoming nodes' copies then take what
// is left, largest pods first (fillUpcoming).
func (d *decision) filterSchedulable(ctx context.Context) ([]pending, error) {
	ready, coming := d.split()
	d.reuse = newFilterReuse(d.in.Checker, ready, d.otherNodes(coming), d.prev, d.startingNodes())
	d.reuse.keepChecks(d.in.Pending)
	pods, err := d.placeCleared(ctx, ready)
	if err != nil {
		return nil, err
	}
	d.reuse.clearedOn(d.placed, d.upcoming)
	// Each group looks only at the ready nodes it can fit on (same answers
	// as the whole list, see simulator.NodeIndex).
	nodes := simulator.NewNodeIndexFrom(ready, d.reuse.prev.index)
	d.reuse.next.index = nodes
	var remaining []pending
	for i, g := range pods {
		if i > 0 && passed(d.filterDeadline) {
			for _, g := range pods[i:] {
				d.skip(g, g.Pods)
			}
			break
		}
		placed, unplaced, gc, err := d.placeGroup(ctx, g, nodes)
		if err != nil {
			return nil, err
		}
		d.filtered(placed)
		if len(unplaced) > 0 {
			remaining = append(remaining, pending{group: g, pods: unplaced, check: gc, since: len(d.placed)})
		}
	}
	if len(remaining) > 0 {
		// What reads the nodes next (the upcoming nodes' fill, the rounds)
		// reads them as the filter left them.
		if err := d.reuse.bind(nodes, d.in.Checker.Snapshot()); err != nil {
			return nil, err
		}
	}
	return d.fillUpcoming(ctx, remaining, coming, nodes)
}

// fillUpcoming places pods the ready nodes left on the upcoming nodes'
// copies, the groups of the largest pods first (first-fit decreasing, as
// the estimates packed those nodes when they were asked for): in the
// groups' order, small pods tried first would spread over the copies and
// take the room an earlier plan kept for large ones, and each decision
// would ask for nodes again. Pods the copies took may then let others onto
// nodes that refused them (settleStateful); ready, when set, indexes the ready
// nodes.
func (d *decision) fillUpcoming(ctx context.Context, remaining []pending, coming []fwk.NodeInfo, ready *simulator.NodeIndex) ([]pending, error) {
	if len(coming) == 0 || len(remaining) == 0 || passed(d.filterDeadline) {
		return remaining, nil
	}
	c := d.in.Checker
	size := make([]float64, len(remaining))
	order := make([]int, len(remaining))
	for i := range remaining {
		r := &remaining[i]
		if r.check == nil {
			// Reused placements come without a check.
			gc, err := d.checkGroup(ctx, r.group)
			if err != nil {
				return nil, err
			}
			r.check, r.since = gc, len(d.placed)
		}
		order[i] = i
		size[i] = estimator.Size(estimator.Work{Check: r.check}, coming[0].Node())
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(size[b], size[a]) })
	coming = d.vacantFirst(coming)
	before := len(d.placed)
	if err := d.fillWaited(ctx, remaining, order, coming); err != nil {
		return nil, err
	}
	for _, i := range order {
		r := &remaining[i]
		gc, err := c.CatchUp(ctx, r.check, d.placed[r.since:])
		if err != nil {
			return nil, err
		}
		placed, unplaced, err := c.PlaceGroup(ctx, gc, r.pods, coming)
		if err != nil {
			return nil, err
		}
		d.filtered(placed)
		r.pods, r.check, r.since = unplaced, gc, len(d.placed)
	}
	if len(d.placed) > before {
		if err := d.settleStateful(ctx, remaining, ready, coming); err != nil {
			return nil, err
		}
	}
	return slices.DeleteFunc(remaining, func(r pending) bool { return len(r.pods) == 0 }), nil
}

// fillWaited places the pods of remaining (in order) that wait for a
// group's requested nodes (Input.Waiting) on that group's copies among
// coming, each pod group's waiting pods a group of nodes at a time.
func (d *decision) fillWaited(ctx context.Context, remaining []pending, order []int, coming []fwk.NodeInfo) error {
	if len(d.in.Waiting) == 0 {
		return nil
	}
	copies := map[string][]fwk.NodeInfo{}
	for _, ni := range coming {
		g := d.upcoming[ni.Node().Name]
		copies[g] = append(copies[g], ni)
	}
	c := d.in.Checker
	for _, i := range order {
		r := &remaining[i]
		var groups []string
		waiting := map[string][]*corev1.Pod{}
		for _, p := range r.pods {
			g, ok := d.in.Waiting[p.UID]
			if !ok || len(copies[g]) == 0 {
				continue
			}
			if waiting[g] == nil {
				groups = append(groups, g)
			}
			waiting[g] = append(waiting[g], p)
		}
		for _, g := range groups {
			gc, err := c.CatchUp(ctx, r.check, d.placed[r.since:])
			if err != nil {
				return err
			}
			placed, _, err := c.PlaceGroup(ctx, gc, waiting[g], copies[g])
			if err != nil {
				return err
			}
			d.filtered(placed)
			r.check, r.since = gc, len(d.placed)
			r.pods = withoutPlaced(r.pods, placed)
		}
	}
	return nil
}

// withoutPlaced is pods but those placed, in their order.
func withoutPlaced(pods []*corev1.Pod, placed []simulator.Placed) []*corev1.Pod {
	if len(placed) == 0 {
		return pods
	}
	gone := make(map[types.UID]bool, len(placed))
	for _, pl := range placed {
		gone[pl.Info.GetPod().UID] = true
	}
	return slices.DeleteFunc(slices.Clone(pods), func(p *corev1.Pod) bool { return gone[p.UID] })
}

// settleStateful places the pods of groups whose fit depends on where other pods
// are (a zone spread's skew, a pod affinity's match) on the nodes that
// refused them before the upcoming copies took pods: a zone's ready node
// takes its second spread pod only once the other zones' upcoming nodes
// have theirs. Ready nodes (ready, when set) first, as the scheduler will
// place them, then the copies; until nothing more moves.
func (d *decision) settleStateful(ctx context.Context, remaining []pending, ready *simulator.NodeIndex, coming []fwk.NodeInfo) error {
	c := d.in.Checker
	for moved := true; moved; {
		moved = false
		for i := range remaining {
			r := &remaining[i]
			if len(r.pods) == 0 || !r.check.Stateful() {
				continue
			}
			gc, err := c.CatchUp(ctx, r.check, d.placed[r.since:])
			if err != nil {
				return err
			}
			left := r.pods
			if ready != nil {
				var placed []simulator.Placed
				if placed, left, err = c.PlaceGroupIndexed(ctx, gc, left, ready); err != nil {
					return err
				}
				d.filtered(placed)
			}
			placed, unplaced, err := c.PlaceGroup(ctx, gc, left, coming)
			if err != nil {
				return err
			}
			d.filtered(placed)
			moved = moved || len(unplaced) < len(r.pods)
			r.pods, r.check, r.since = unplaced, gc, len(d.placed)
		}
	}
	return nil
}

// vacantFirst orders the upcoming copies for the fill: first those of
// registered nodes still starting that hold no pod but their template's
// (none nominated to them, none placed back there), then the others, each
// part in its order. The scheduler binds a pod nominated to a starting
// node elsewhere when another node becomes ready first with room for it:
// a starting node whose pods all went so would end empty while pods wait
// for the room on other nodes; filled first, it takes them.
func (d *decision) vacantFirst(coming []fwk.NodeInfo) []fwk.NodeInfo {
	vacant := func(ni fwk.NodeInfo) bool {
		name := ni.Node().Name
		if d.starting[name] == "" {
			return false
		}
		g := d.groupByID(d.upcoming[name])
		return g != nil && len(ni.GetPods()) <= len(g.Template.Pods)
	}
	out := make([]fwk.NodeInfo, 0, len(coming))
	for _, ni := range coming {
		if vacant(ni) {
			out = append(out, ni)
		}
	}
	for _, ni := range coming {
		if !vacant(ni) {
			out = append(out, ni)
		}
	}
	return out
}

// filtered records pods the filter placed: on a ready node, or awaiting an
// upcoming one (by name when it stands for a registered node).
func (d *decision) filtered(placed []simulator.Placed) {
	d.plan.FitExisting += len(placed)
	for _, pl := range placed {
		if group, ok := d.upcoming[pl.Node]; ok {
			d.plan.Awaiting[pl.Info.GetPod().UID] = group
			if node := d.starting[pl.Node]; node != "" {
				d.plan.AwaitingOn[pl.Info.GetPod().UID] = node
			}
		} else {
			d.plan.OnExisting = append(d.plan.OnExisting, pl)
		}
	}
	d.placed = append(d.placed, placed...)
}

// split parts the nodes that take pods (readyNodes) into the ready nodes
// and the upcoming nodes' copies.
func (d *decision) split() (ready, coming []fwk.NodeInfo) {
	nodes := d.readyNodes()
	ready = make([]fwk.NodeInfo, 0, max(0, len(nodes)-len(d.upcoming)))
	coming = make([]fwk.NodeInfo, 0, len(d.upcoming))
	for _, ni := range nodes {
		if _, ok := d.upcoming[ni.Node().Name]; ok {
			coming = append(coming, ni)
		} else {
			ready = append(ready, ni)
		}
	}
	return ready, coming
}

// startingNodes names the registered nodes still starting whose copies
// took the pods nominated to them (addUpcoming).
func (d *decision) startingNodes() map[string]bool {
	out := make(map[string]bool, len(d.starting))
	for _, node := range d.starting {
		out[node] = true
	}
	return out
}

// readyNodes are the snapshot's nodes but the NotReady ones: ready nodes
// and upcoming nodes' copies.
func (d *decision) readyNodes() []fwk.NodeInfo {
	all := d.in.Checker.Snapshot().Infos()
	if len(d.in.NotReady) == 0 {
		return all
	}
	out := make([]fwk.NodeInfo, 0, len(all))
	for _, ni := range all {
		if !d.in.NotReady[ni.Node().Name] {
			out = append(out, ni)
		}
	}
	return out
}

// otherNodes is coming and the snapshot's NotReady nodes: those of its
// nodes that readyNodes leaves out.
func (d *decision) otherNodes(coming []fwk.NodeInfo) []fwk.NodeInfo {
	out := slices.Clone(coming)
	snap := d.in.Checker.Snapshot()
	for name, yes := range d.in.NotReady {
		if ni := snap.NodeInfo(name); yes && ni != nil {
			out = append(out, ni)
		}
	}
	return out
}

// skip leaves pods of g for the next decision.
func (d *decision) skip(g *simulator.PodGroup, pods []*corev1.Pod) {
	d.plan.Skipped += len(pods)
	d.plan.Unfinished = append(d.plan.Unfinished, g)
}

// podKey identifies a pod within a decision.
func podKey(p *corev1.Pod) string { return string(p.UID) + "/" + p.Namespace + "/" + p.Name }
