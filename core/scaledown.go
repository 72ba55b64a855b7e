package core

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/act"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// scaleDownReport is what the scale-down step saw and did.
type scaleDownReport struct {
	plan              *scaledown.Plan
	reused            bool
	notEvenCandidates []scaledown.Unremovable
	cooldown          string
	started           []string
	// candidates are the nodes the plan considered.
	candidates []scaledown.Candidate
	// evictions are the scale-down under way's, as the status ConfigMap
	// keeps them (never nil).
	evictions []scaledown.Eviction
}

// scaleDown plans which nodes can go (scaledown.Planner), tracks how long
// they have been unneeded (scaledown.Track), soft-taints them, and starts
// removing those scaledown.Removals picks.
func (d *Decider) scaleDown(ctx context.Context, o *observation, report *Iteration) error {
	if !d.opts.ScaleDown.Enabled {
		return nil
	}
	start := d.clock.Now()
	defer func() { d.metrics.Observe("scaleDown", d.clock.Since(start)) }()
	sd := &scaleDownReport{}
	report.scaleDown = sd
	// One view of the removals under way for the whole step: the plan,
	// the soft taints, the removals and whether the scale-down is over
	// all read the same.
	removing := d.actuator.Removing()
	evictions, err := d.evictions(ctx, removing, o.now)
	if err != nil {
		return err
	}
	evicted := scaledown.EvictedSince(evictions, d.mem.scaleDownOver)
	plan, err := d.planScaleDown(ctx, o, report, sd, removing, evicted)
	if err != nil {
		return err
	}
	d.metrics.Observe("scaleDown:plan", d.clock.Since(start))
	if d.opts.ScaleInView {
		d.scaleIn.publish(o, plan, sd.candidates, d.checker.Snapshot(), scaledown.Ignored{DaemonSets: d.opts.ScaleDown.IgnoreDaemonSetsUtilization,
			MirrorPods: d.opts.ScaleDown.IgnoreMirrorPodsUtilization})
	}
	nodes := nodesByName(o.nodes)
	d.mem.unneeded = scaledown.Track(d.mem.unneeded, plan, taintedSince(plan, nodes), o.now)
	d.metrics.UnneededNodes.Set(float64(len(plan.Unneeded)))
	d.metrics.CA.UnneededNodesCount.Set(float64(len(plan.Unneeded)))
	remove, add := scaledown.SoftTaintChanges(softTaintNodes(plan, nodes, removing.Nodes))
	d.actuator.SoftTaint(ctx, act.SoftTaints{Remove: remove, Add: add, Since: d.mem.unneeded})
	rin := removalInput(o, plan, d.mem.unneeded, report.scaledUp, d.mem.lastScaleUp, removing, d.opts)
	left := disruptionsLeft(o, d.opts.Consolidation, d.sched.activeBudgets(), removing)
	rin.Disruptions = &left
	rin.Placing = scaledown.Placing(o.pending, evicted)
	decision := scaledown.Removals(rin)
	if scaledown.Settled(rin, decision, removing.Drains) {
		// The pods this scale-down moved may be moved by the next one.
		d.mem.scaleDownOver = o.now
	}
	sd.evictions = underWay(evictions, d.mem.scaleDownOver)
	sd.cooldown = decision.Waiting
	cooling := 0.0
	if sd.cooldown != "" {
		cooling = 1
	}
	d.metrics.ScaleDownInCooldown.Set(cooling)
	d.metrics.CA.ScaleDownInCooldown.Set(cooling)
	removals := make([]act.Removal, 0, len(decision.Start))
	for _, r := range decision.Start {
		if pod := nominatedHere(r.Evict); pod != nil {
			// An eviction of a pod not yet bound would delete it.
			klog.FromContext(ctx).Info("Not removing a node a pending pod is nominated to", "node", r.Node, "pod", klog.KObj(pod))
			continue
		}
		removals = append(removals, act.Removal{Name: r.Node, Node: nodes[r.Node], Group: o.group(r.Group).group, Pods: r.Evict,
			DaemonSet: r.Pods.DaemonSet, Kind: r.Kind})
	}
	sd.started = d.actuator.Remove(d.lifetime, removals)
	d.wake.scaleDownDue = decision.NextDue
	return d.consolidate(ctx, o, report, plan, sd.started)
}

// planScaleDown is the plan of which candidates can go (a node where a
// pod the scale-down under way moved runs stays; evicted are the
// evictions of that scale-down, by controller), made with the
// headroom in place (headroom occupies room like a pod, so no node goes if
// the headroom would no longer fit) and with the pending pods that fit on
// existing nodes pictured where scale-up found room for them, so a node
// the scheduler is about to fill is not taken for empty.
func (d *Decider) planScaleDown(ctx context.Context, o *observation, report *Iteration, sd *scaleDownReport,
	removing act.Removing, evicted map[types.UID]time.Time) (*scaledown.Plan, error) {
	in := scaleDownInput(o, sd, removing, d.checker, d.opts, d.sched, d.consolidating(o))
	in.Evicted = evicted
	sd.candidates = in.Candidates
	if report.plan != nil {
		in.Arriving = report.plan.OnExisting
	}
	snap := d.checker.Snapshot()
	snap.Fork()
	defer snap.Revert()
	var err error
	if in.Salt, err = placeHeadroom(ctx, d.checker, d.keys, o.headroom); err != nil {
		return nil, err
	}
	in.Owners = d.observer.owners(snap, in.Candidates, in.Arriving)
	plan, reused, err := d.mem.scaleDown.Plan(ctx, in)
	if err != nil {
		return nil, err
	}
	sd.plan, sd.reused = plan, reused
	if len(plan.Unreserved) > 0 && !reused {
		klog.FromContext(ctx).V(2).Info("Pods of nodes being drained fit on no node that stays; the scheduler leaves them pending",
			"pods", len(plan.Unreserved), "first", klog.KObj(plan.Unreserved[0]))
	}
	return plan, nil
}

// removalInput is what scaledown.Removals reads: the plan, the tracking,
// each group's times, the cooldowns (scaledUp: this iteration grew a
// group) and the budgets left by the removals under way.
func removalInput(o *observation, plan *scaledown.Plan, tracking scaledown.Tracking, scaledUp bool, lastScaleUp time.Time,
	removing act.Removing, opts Options) scaledown.RemovalInput {
	sd := opts.ScaleDown
	all, drains, lastDelete, lastFailure := removing.All, removing.Drains, removing.LastDelete, removing.LastFailure
	in := scaledown.RemovalInput{Plan: plan, Tracking: tracking, Groups: map[string]scaledown.Times{},
		Cooldowns:   scaledown.Cooldowns{ScaleUpNow: scaledUp, LastScaleUp: lastScaleUp, LastDelete: lastDelete, LastFailure: lastFailure},
		Delays:      scaledown.Delays{AfterAdd: sd.DelayAfterAdd, AfterDelete: sd.DelayAfterDelete, AfterFailure: sd.DelayAfterFailure},
		Parallelism: sd.MaxParallelism - all, DrainParallelism: sd.MaxDrainParallelism - drains,
		Capacity: map[string]scaledown.Resources{}, Min: scaledown.Resources{MilliCores: opts.MinMilliCores, Memory: opts.MinMemoryBytes},
		Pictured: map[types.UID]bool{}, Now: o.now}
	for _, g := range o.groups {
		own := opts.groupOptions(o, g.group.Id())
		in.Groups[g.group.Id()] = scaledown.Times{Unneeded: own.ScaleDownUnneededTime, Unready: own.ScaleDownUnreadyTime}
	}
	for _, n := range o.nodes {
		c := scaledown.Resources{MilliCores: n.Status.Capacity.Cpu().MilliValue(), Memory: n.Status.Capacity.Memory().Value()}
		in.Capacity[n.Name] = c
		in.Cluster.MilliCores += c.MilliCores
		in.Cluster.Memory += c.Memory
	}
	for _, p := range o.pending {
		if pictured(p) {
			in.Pictured[p.UID] = true
		}
	}
	return in
}

// taintedSince are the times the DeletionCandidate taints of the plan's
// unneeded nodes name: after a restart, the unneeded time goes on from
// there.
func taintedSince(plan *scaledown.Plan, nodes map[string]*corev1.Node) map[string]time.Time {
	out := map[string]time.Time{}
	for _, u := range plan.Unneeded {
		if n := nodes[u.Node]; n != nil {
			if t, found := act.TaintTime(n, scaledown.DeletionCandidateTaint); found {
				out[u.Node] = t
			}
		}
	}
	return out
}

// scaleDownInput gathers the candidates: nodes of a node group (in the
// checker's snapshot, within its range this iteration, sched) that no
// annotation, removal in progress or replacement in flight (consolidating)
// keeps; sd gets those kept.
func scaleDownInput(o *observation, sd *scaleDownReport, removing act.Removing, checker *simulator.Checker, opts Options, sched *schedules,
	consolidating map[string]bool) scaledown.Input {
	deleting, perGroup := removing.Nodes, removing.PerGroup
	busy := map[string]bool{}
	for _, n := range deleting {
		busy[n] = true
	}
	in := scaledown.Input{
		Checker: checker, Groups: map[string]scaledown.GroupSize{}, Deleting: deleting, Now: o.now,
		Rules: scaledown.RuleOptions{SkipNodesWithSystemPods: opts.ScaleDown.SkipNodesWithSystemPods,
			SkipNodesWithLocalStorage:         opts.ScaleDown.SkipNodesWithLocalStorage,
			SkipNodesWithCustomControllerPods: opts.ScaleDown.SkipNodesWithCustomControllerPods},
		IgnoreMirrorPodsUtilization: opts.ScaleDown.IgnoreMirrorPodsUtilization,
		KeepUnready:                 !opts.ScaleDown.UnreadyEnabled, MaxNonEmptyUnneeded: opts.ScaleDown.NonEmptyCandidatesCount,
	}
	for _, g := range o.groups {
		if g.problem == "" {
			// A scheduled minimum holds the group up like the cloud's.
			minSize, _ := sched.effectiveSize(g)
			in.Groups[g.group.Id()] = scaledown.GroupSize{Target: g.target - perGroup[g.group.Id()], Min: minSize}
		}
	}
	for _, n := range o.nodes {
		gid := o.groupOfNode[n.Name]
		if _, usable := in.Groups[gid]; !usable {
			continue
		}
		switch {
		case disabled(n) != "":
			sd.notEvenCandidates = append(sd.notEvenCandidates, scaledown.Unremovable{Node: n.Name, Reason: "ScaleDownDisabledAnnotation",
				Detail: disabled(n)})
		case consolidating[n.Name]:
			sd.notEvenCandidates = append(sd.notEvenCandidates, scaledown.Unremovable{Node: n.Name, Reason: "Consolidating",
				Detail: "a replacement in flight holds it"})
		case busy[n.Name] || act.HasTaint(n, scaledown.ToBeDeletedTaint):
			sd.notEvenCandidates = append(sd.notEvenCandidates, scaledown.Unremovable{Node: n.Name, Reason: "CurrentlyBeingDeleted"})
		case checker.Snapshot().NodeInfo(n.Name) != nil:
			own := opts.groupOptions(o, gid)
			in.Candidates = append(in.Candidates, scaledown.Candidate{Name: n.Name, Group: gid, Threshold: own.ScaleDownUtilizationThreshold,
				GPUThreshold: own.ScaleDownGpuUtilizationThreshold, IgnoreDaemonSetsUtilization: own.IgnoreDaemonSetsUtilization,
				Unready: !o.ready(n.Name)})
		}
	}
	in.PDBs = o.pdbs
	return in
}

// disabled names the annotation that keeps n out of scale-down, or "".
func disabled(n *corev1.Node) string {
	why, _ := scaledown.Disabled(n)
	return why
}

// groupOptions are the group's own scale-down options, or the flags'.
func (opts *Options) groupOptions(o *observation, id string) cloudprovider.NodeGroupAutoscalingOptions {
	def := cloudprovider.NodeGroupAutoscalingOptions{
		ScaleDownUtilizationThreshold:    opts.ScaleDown.UtilizationThreshold,
		ScaleDownGpuUtilizationThreshold: opts.ScaleDown.GPUUtilizationThreshold,
		ScaleDownUnneededTime:            opts.ScaleDown.UnneededTime,
		ScaleDownUnreadyTime:             opts.ScaleDown.UnreadyTime,
		MaxNodeProvisionTime:             opts.ClusterState.MaxNodeProvisionTime,
		IgnoreDaemonSetsUtilization:      opts.ScaleDown.IgnoreDaemonSetsUtilization,
		MaxNodeLifetime:                  opts.MaxNodeLifetime,
	}
	g := o.group(id)
	if g == nil {
		return def
	}
	if own, err := g.group.GetOptions(def); err == nil && own != nil {
		return *own
	}
	return def
}

// softTaintNodes is what the soft-taint step needs to know of each node;
// deleting are the nodes being removed.
func softTaintNodes(plan *scaledown.Plan, nodes map[string]*corev1.Node, deleting []string) []scaledown.SoftTaintNode {
	busy := make(map[string]bool, len(deleting))
	for _, d := range deleting {
		busy[d] = true
	}
	out := make([]scaledown.SoftTaintNode, 0, len(nodes))
	seen := make(map[string]bool, len(plan.Unneeded))
	for _, u := range plan.Unneeded {
		if n := nodes[u.Node]; n != nil {
			seen[u.Node] = true
			out = append(out, softTaintNode(n, true, busy))
		}
	}
	for name, n := range nodes {
		if !seen[name] {
			out = append(out, softTaintNode(n, false, busy))
		}
	}
	return out
}

func softTaintNode(n *corev1.Node, unneeded bool, busy map[string]bool) scaledown.SoftTaintNode {
	return scaledown.SoftTaintNode{Name: n.Name, Tainted: act.HasTaint(n, scaledown.DeletionCandidateTaint), Unneeded: unneeded,
		Removing: busy[n.Name] || act.HasTaint(n, scaledown.ToBeDeletedTaint)}
}

// placeHeadroom puts the headroom pods on the free capacity of the
// snapshot (forked by the caller), in an order of their own, and returns
// what identifies the placement for the planner's memory: which pods, with
// what scheduling fields (their equivalence keys), went on which node.
func placeHeadroom(ctx context.Context, checker *simulator.Checker, keys *simulator.EquivalenceKeys, pods []*corev1.Pod) (string, error) {
	if len(pods) == 0 {
		return "", nil
	}
	pods = slices.SortedFunc(slices.Values(pods), func(a, b *corev1.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	snap := checker.Snapshot()
	var placed []string
	for _, g := range keys.Group(pods) {
		gc, err := checker.CheckGroup(ctx, g)
		if err != nil {
			return "", err
		}
		done, _, err := checker.PlaceGroup(ctx, gc, g.Pods, snap.Infos())
		if err != nil {
			return "", err
		}
		for _, pl := range done {
			p := pl.Info.GetPod()
			placed = append(placed, fmt.Sprintf("%s/%s@%s#%s", p.Namespace, p.Name, pl.Node, g.Key))
		}
	}
	slices.Sort(placed)
	h := fnv.New64a()
	for _, p := range placed {
		h.Write([]byte(p + "\n"))
	}
	return fmt.Sprintf("headroom %d/%d %x", len(placed), len(pods), h.Sum64()), nil
}

func nodesByName(nodes []*corev1.Node) map[string]*corev1.Node {
	out := make(map[string]*corev1.Node, len(nodes))
	for _, n := range nodes {
		out[n.Name] = n
	}
	return out
}

func clusterCapacity(nodes []*corev1.Node) (milliCores, memory int64) {
	for _, n := range nodes {
		milliCores += n.Status.Capacity.Cpu().MilliValue()
		memory += n.Status.Capacity.Memory().Value()
	}
	return milliCores, memory
}

// nominatedHere is the first of pods that is not bound but nominated to the
// node (the snapshot counts it there), or nil.
func nominatedHere(pods []*corev1.Pod) *corev1.Pod {
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			return p
		}
	}
	return nil
}
