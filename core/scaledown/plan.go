package scaledown

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tidal-autoscaler/tidal/simulator"
)

// Reason says why a node is not unneeded.
type Reason string

// Reasons a node stays, named as Cluster Autoscaler's unremovable reasons.
const (
	NotUnderutilized        Reason = "NotUnderutilized"
	NodeGroupMinSizeReached Reason = "NodeGroupMinSizeReached"
	BlockedByPod            Reason = "BlockedByPod"
	NoPlaceToMovePods       Reason = "NoPlaceToMovePods"
	// ScaleDownUnreadyDisabled: the node is unready and
	// --scale-down-unready-enabled=false.
	ScaleDownUnreadyDisabled Reason = "ScaleDownUnreadyDisabled"
	UnexpectedError          Reason = "UnexpectedError"
	// HoldsMovedPod: a pod the scale-down under way moved is on the node,
	// or arriving there (Input.Evicted); tidal's own reason.
	HoldsMovedPod Reason = "HoldsMovedPod"
)

// Candidate is a node the loop may remove: it belongs to a node group and
// nothing outside the simulation keeps it (annotations, cooldowns).
type Candidate struct {
	Name  string
	Group string
	// Threshold is the group's utilization threshold; GPUThreshold the
	// one of GPU nodes, judged by their GPU requests alone.
	Threshold    float64
	GPUThreshold float64
	// IgnoreDaemonSetsUtilization leaves DaemonSet pods out of its
	// utilization (the flag, or the group's own option).
	IgnoreDaemonSetsUtilization bool
	// Unready nodes are candidates whatever their utilization.
	Unready bool
}

// GroupSize bounds how many of a group's nodes may go.
type GroupSize struct {
	Target, Min int
}

// Input is what a scale-down plan needs.
type Input struct {
	// Checker holds the snapshot: every node and the pods bound to it.
	Checker    *simulator.Checker
	Candidates []Candidate
	Groups     map[string]GroupSize
	// Deleting are nodes being removed already: no pod may move there,
	// and the pods their drains have yet to evict take their room on the
	// nodes that stay before any candidate does.
	Deleting []string
	PDBs     []*policyv1.PodDisruptionBudget
	Owners   Owners
	Rules    RuleOptions
	// IgnoreMirrorPodsUtilization leaves mirror (static) pods out of
	// utilization.
	IgnoreMirrorPodsUtilization bool
	// KeepUnready keeps unready nodes (--scale-down-unready-enabled=false).
	KeepUnready bool
	// MaxNonEmptyUnneeded bounds how many nodes with pods to move the plan
	// finds unneeded (--scale-down-non-empty-candidates-count); the others
	// are not simulated. Zero or less: no bound.
	MaxNonEmptyUnneeded int
	Now                 time.Time
	// Salt names what the caller changed in the snapshot in a fork (such
	// as pods placed to keep headroom): the planner's memory keys on it.
	Salt string
	// Arriving are pending pods the scheduler is about to bind, each on
	// the node where scale-up found room for it. The plan pictures them
	// there: a node they would land on is not empty, and goes only if they
	// fit elsewhere too. They are never evicted (they are not there yet).
	Arriving []simulator.Placed
	// Evicted maps the controllers whose pods the drains of the scale-down
	// under way evicted to the first such eviction (EvictedSince). A node where
	// a pod they moved is, or arrives, stays until the scale-down is over
	// (Settled): no pod is evicted twice by one scale-down, wherever the
	// scheduler put it.
	Evicted map[types.UID]time.Time
}

// Plan is which candidates can go now and why the others cannot.
type Plan struct {
	Unneeded    []Unneeded
	Unremovable []Unremovable
	// Reserved counts the pods of the nodes being drained whose room the
	// plan kept; Unreserved are those that fit on no node that stays.
	Reserved   int
	Unreserved []*corev1.Pod
	// ReusedRemovals counts the removals taken again from the last plan
	// without searching (DecideFrom).
	ReusedRemovals int
	// reads is what the plan read besides the input's plain fields.
	reads reads
	// arriving are the UIDs of the input's arriving pods the plan
	// pictured on their nodes.
	arriving map[types.UID]bool
}

// Unneeded is a node whose pods all fit elsewhere.
type Unneeded struct {
	Node        string
	Group       string
	Utilization float64
	Unready     bool
	Pods        NodePods
}

// Empty reports whether only DaemonSet and mirror pods run there.
func (u Unneeded) Empty() bool { return len(u.Pods.ToMove) == 0 }

// Unremovable is a candidate that must stay, and why.
type Unremovable struct {
	Node        string
	Reason      Reason
	Blocker     *Blocker
	Detail      string
	Utilization float64
}

func (u Unremovable) String() string {
	switch {
	case u.Blocker != nil:
		return fmt.Sprintf("%s: %s", u.Reason, u.Blocker)
	case u.Detail != "":
		return fmt.Sprintf("%s: %s", u.Reason, u.Detail)
	}
	return string(u.Reason)
}

// Decide plans scale-down. Candidates are taken emptiest first; each one
// whose pods all fit on the nodes that stay is unneeded, and its pods stay
// on their new nodes for the rest of the plan, so removals add up. The
// snapshot is restored before Decide returns. The plan does not depend on
// the order of candidates and PDBs.
func Decide(ctx context.Context, in Input) (*Plan, error) { return decide(ctx, in, nil, nil) }

// decide is Decide; with keys, pods to move that are equivalent share one
// PreFilter (and keys caches their equivalence keys for the next plan);
// with run, removals are taken again from the last plan and recorded for
// the next (DecideFrom).
func decide(ctx context.Context, in Input, keys *simulator.EquivalenceKeys, run *reuseRun) (*Plan, error) {
	in.Candidates = sortedCandidates(in.Candidates)
	snap := in.Checker.Snapshot()
	snap.Fork()
	defer snap.Revert()
	draining, err := takeDeleting(snap, in.Deleting, in.Now)
	if err != nil {
		return nil, err
	}
	p := newPlanner(in, keys, run)
	if run != nil {
		for _, name := range in.Deleting {
			run.wroteEarly(name, nil)
		}
	}
	if err := p.pictureArriving(); err != nil {
		return nil, err
	}
	// Candidates are judged by what runs on them; the room the drains
	// under way need is taken after, and a reserved pod put on a candidate
	// moves again if that candidate goes.
	ordered := p.order()
	if err := p.reserve(ctx, draining); err != nil {
		return nil, err
	}
	if run != nil {
		run.begin(snap)
	}
	if err := p.considerAll(ctx, ordered); err != nil {
		return nil, err
	}
	if keys != nil {
		keys.Sweep()
	}
	p.plan.reads = reads{madeAt: in.Now, until: p.until}
	return p.plan, nil
}

// pictureArriving puts the arriving pods on their nodes in the snapshot
// (forked by decide); a pod whose node is gone or being deleted is left
// out: the scheduler will look for another node for it.
func (p *planner) pictureArriving() error {
	snap := p.in.Checker.Snapshot()
	for _, a := range p.in.Arriving {
		if snap.NodeInfo(a.Node) == nil {
			continue
		}
		if err := snap.AddPod(a.Info, a.Node); err != nil {
			return fmt.Errorf("picture arriving pod on %s: %w", a.Node, err)
		}
		p.plan.arriving[a.Info.GetPod().UID] = true
		if info, ok := a.Info.(*framework.PodInfo); ok && p.run != nil {
			p.run.wroteEarly(a.Node, info)
		}
	}
	return nil
}

// newPlanner starts a plan on the snapshot as decide forked it, the nodes
// being deleted taken out.
func newPlanner(in Input, keys *simulator.EquivalenceKeys, run *reuseRun) *planner {
	return &planner{in: in, keys: keys, run: run, plan: &Plan{arriving: map[types.UID]bool{}}, pdbs: NewPDBBudgets(in.PDBs), removed: map[string]int{},
		kinds: map[string]*kind{}, gone: map[string]bool{}, later: map[string]bool{},
		checks: map[*framework.PodInfo]*simulator.GroupCheck{}, base: slices.Clone(in.Checker.Snapshot().Infos())}
}

type planner struct {
	in      Input
	keys    *simulator.EquivalenceKeys
	plan    *Plan
	pdbs    *PDBBudgets
	removed map[string]int
	// nonEmpty counts the unneeded nodes with pods to move.
	nonEmpty int
	// kinds are the kinds of pods moved so far (see kind), kindKey
	// scratch space for their keys; gone are the nodes the plan removed.
	kinds   map[string]*kind
	kindKey []byte
	gone    map[string]bool
	// removing is the node whose removal is being simulated; later are
	// the candidates not considered yet.
	removing string
	later    map[string]bool
	// checks keeps the check of every pod moved onto a node the plan may
	// still remove, for when it must move again; once that node is
	// considered, the check goes (a check holds the pod's PreFilter state:
	// kept for the whole plan, those of a large cluster add up to hundreds
	// of megabytes).
	checks map[*framework.PodInfo]*simulator.GroupCheck
	// until is when the first pod being deleted passes its grace period,
	// turning from a pod to move into one ignored; zero when none will.
	until time.Time
	// base are the nodes when the plan started, in the snapshot's order:
	// those the kinds of pods may go to are taken from them.
	base []fwk.NodeInfo
	// run, when set, takes removals again from the last plan and records
	// them for the next; unchecked are the candidates of the batch under
	// way not checked ahead yet (while removals are taken again).
	run       *reuseRun
	unchecked []evaluated
	// simulated is set when the candidate considered reached the removal's
	// simulation (with a run).
	simulated *bool
}

// considerAll considers the candidates in order, a batch at a time: the
// pods of a batch are checked ahead (see precheck), then its removals are
// simulated.
func (p *planner) considerAll(ctx context.Context, ordered []evaluated) error {
	for _, e := range ordered {
		p.later[e.Name] = true
	}
	for start := 0; start < len(ordered); {
		end := batchEnd(ordered, start)
		lazy := p.run != nil && p.run.usable
		if !lazy {
			p.precheck(ctx, ordered[start:end])
		}
		for i := start; i < end; i++ {
			delete(p.later, ordered[i].Name)
			if lazy {
				p.unchecked = ordered[i:end]
			}
			if err := p.consider(ctx, &ordered[i]); err != nil {
				return err
			}
			// Once checked ahead, the rest of the batch is.
			lazy = lazy && p.unchecked != nil
			p.unchecked = nil
			p.dropChecks(ordered[i].Name)
			// The checks are garbage now, unless kept in p.checks.
			ordered[i].checks = nil
		}
		start = end
	}
	return nil
}

// dropChecks forgets the checks of the pods moved onto the node, now
// considered: they stay there if it stays, and if it went, they moved on
// with checks kept under their new node.
func (p *planner) dropChecks(node string) {
	ni := p.in.Checker.Snapshot().NodeInfo(node)
	if ni == nil {
		return
	}
	for _, pi := range ni.Pods {
		if info, ok := pi.(*framework.PodInfo); ok {
			delete(p.checks, info)
		}
	}
}

// noteDest records where the removal being recorded put a pod, and
// whether its search read the whole cluster.
func (p *planner) noteDest(gc *simulator.GroupCheck, dest string) {
	if p.run == nil || p.run.rec == nil {
		return
	}
	p.run.rec.dests = append(p.run.rec.dests, dest)
	if gc.Stateful() {
		p.run.rec.global = true
	}
}

// precheckBatch is about how many pods are checked ahead at once: enough to
// keep every core busy, few enough that the checks of a large cluster are
// never all held at the same time.
const precheckBatch = 2048

// batchEnd is where the batch of candidates starting at start ends.
func batchEnd(evs []evaluated, start int) int {
	end, pods := start, 0
	for end < len(evs) && (end == start || pods+len(evs[end].moving) <= precheckBatch) {
		pods += len(evs[end].moving)
		end++
	}
	return end
}

// evaluated is a candidate with what is known before simulating it.
type evaluated struct {
	Candidate
	util float64
	pods NodePods
	// moving are the parsed pods of pods.ToMove, reused by the simulation,
	// and checks their PreFilter results computed ahead (see precheck).
	moving []*framework.PodInfo
	checks []*simulator.GroupCheck
	// original are the node's pods when the plan started; pods found there
	// later were moved in by earlier removals and must move again.
	original map[*corev1.Pod]bool
}

// order classifies every candidate and sorts them: empty nodes first, then
// by utilization, lowest first.
func (p *planner) order() []evaluated {
	snap := p.in.Checker.Snapshot()
	var out []evaluated
	for _, c := range p.in.Candidates {
		ni := snap.NodeInfo(c.Name)
		if ni == nil {
			continue
		}
		e := evaluated{Candidate: c}
		reason, detail := p.keeps(&e, ni)
		var pods []*corev1.Pod
		if reason == "" {
			pods = podsOf(ni)
			reason, detail = p.holds(pods)
		}
		if reason != "" {
			p.plan.Unremovable = append(p.plan.Unremovable, Unremovable{Node: c.Name, Reason: reason, Utilization: e.util, Detail: detail})
			continue
		}
		e.pods = ClassifyPods(pods, p.in.Rules, p.in.Owners, p.pdbs.Covered, p.in.Now)
		p.noteGracePeriods(pods)
		e.moving = parsed(ni, e.pods.ToMove)
		e.original = make(map[*corev1.Pod]bool, len(pods))
		for _, pod := range pods {
			e.original[pod] = true
		}
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool {
		ei, ej := len(out[i].pods.ToMove) == 0, len(out[j].pods.ToMove) == 0
		if ei != ej {
			return ei
		}
		if out[i].util != out[j].util {
			return out[i].util < out[j].util
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// keeps says why a candidate stays whatever its pods (unready with
// KeepUnready, not underutilized), or "". It fills e.util: GPU nodes are
// judged by their GPU requests and GPUThreshold, as in Cluster Autoscaler.
func (p *planner) keeps(e *evaluated, ni *framework.NodeInfo) (Reason, string) {
	threshold := e.Threshold
	ig := Ignored{DaemonSets: e.IgnoreDaemonSetsUtilization, MirrorPods: p.in.IgnoreMirrorPodsUtilization}
	util, gpu := GPUUtilization(ni, ig)
	if gpu {
		threshold = e.GPUThreshold
	} else {
		util = Utilization(ni, ig)
	}
	e.util = util
	switch {
	case e.Unready && p.in.KeepUnready:
		return ScaleDownUnreadyDisabled, "unready, and --scale-down-unready-enabled=false"
	case !e.Unready && util >= threshold && gpu:
		return NotUnderutilized, fmt.Sprintf("GPU utilization %.2f is not below %.2f", util, threshold)
	case !e.Unready && util >= threshold:
		return NotUnderutilized, fmt.Sprintf("utilization %.2f is not below %.2f", util, threshold)
	}
	return "", ""
}

// holds names the first pod the scale-down under way moved among pods,
// which keeps their node (Input.Evicted).
func (p *planner) holds(pods []*corev1.Pod) (Reason, string) {
	if len(p.in.Evicted) == 0 {
		return "", ""
	}
	for _, pod := range pods {
		if Moved(pod, p.in.Evicted) {
			return HoldsMovedPod, fmt.Sprintf("pod %s/%s was moved here by the scale-down under way", pod.Namespace, pod.Name)
		}
	}
	return "", ""
}

// noteGracePeriods keeps in p.until the earliest time one of pods, being
// deleted, will pass its grace period.
func (p *planner) noteGracePeriods(pods []*corev1.Pod) {
	for _, pod := range pods {
		t, ok := longTerminatingAfter(pod)
		if ok && !p.in.Now.After(t) && (p.until.IsZero() || t.Before(p.until)) {
			p.until = t
		}
	}
}

// consider decides whether the candidate goes, simulating its removal
// (or taking it again from the last plan) when nothing else keeps it.
func (p *planner) consider(ctx context.Context, e *evaluated) error {
	if p.run == nil {
		return p.considerOne(ctx, e)
	}
	simulated := false
	p.simulated = &simulated
	defer func() { p.simulated = nil }()
	if err := p.considerOne(ctx, e); err != nil {
		return err
	}
	if !simulated {
		p.run.skipped(e)
	}
	return nil
}

func (p *planner) considerOne(ctx context.Context, e *evaluated) error {
	stay := func(r Reason, b *Blocker, detail string) {
		p.plan.Unremovable = append(p.plan.Unremovable, Unremovable{Node: e.Name, Reason: r, Blocker: b, Detail: detail, Utilization: e.util})
	}
	g := p.in.Groups[e.Group]
	if g.Target-p.removed[e.Group] <= g.Min {
		stay(NodeGroupMinSizeReached, nil, fmt.Sprintf("node group %s at its minimum size %d", e.Group, g.Min))
		return nil
	}
	if e.pods.Blocker != nil {
		stay(BlockedByPod, e.pods.Blocker, "")
		return nil
	}
	if len(e.pods.ToMove) > 0 && p.in.MaxNonEmptyUnneeded > 0 && p.nonEmpty >= p.in.MaxNonEmptyUnneeded {
		// As Cluster Autoscaler: enough nodes to drain for now; the
		// others are not simulated in this iteration.
		return nil
	}
	if b := p.pdbs.Reserve(e.pods.ToMove); b != nil {
		stay(BlockedByPod, b, "")
		return nil
	}
	unplaced, err := p.simulateRemoval(ctx, e)
	if err != nil {
		return err
	}
	if unplaced != nil {
		p.pdbs.Release(e.pods.ToMove)
		stay(NoPlaceToMovePods, nil, fmt.Sprintf("pod %s/%s fits on no other node", unplaced.Namespace, unplaced.Name))
		return nil
	}
	p.removed[e.Group]++
	if len(e.pods.ToMove) > 0 {
		p.nonEmpty++
	}
	p.plan.Unneeded = append(p.plan.Unneeded, Unneeded{Node: e.Name, Group: e.Group, Utilization: e.util, Unready: e.Unready, Pods: e.pods})
	return nil
}

// simulateRemoval takes the node out of the snapshot and places its pods on
// the other nodes. On success the change stays (later candidates see it);
// otherwise it is undone and the first pod that did not fit is returned.
// With a run, the last plan's removal is taken again when it holds.
func (p *planner) simulateRemoval(ctx context.Context, e *evaluated) (*corev1.Pod, error) {
	c := p.in.Checker
	snap := c.Snapshot()
	moving := e.moving
	var movedIn []*simulator.GroupCheck
	for _, pi := range snap.NodeInfo(e.Name).Pods {
		if info, ok := pi.(*framework.PodInfo); ok && !e.original[info.Pod] {
			moving, movedIn = append(moving, info), append(movedIn, p.checks[info])
			delete(p.checks, info) // kept again below if it moves onto a later candidate
		}
	}
	var script *step
	if p.run != nil {
		*p.simulated = true
		script = p.run.script(p, e, moving)
		if script != nil {
			defer p.run.replayed(p, script)
		} else {
			defer p.run.recorded(p)
		}
	}
	if script == nil && p.unchecked != nil {
		p.precheck(ctx, p.unchecked)
		p.unchecked = nil
	}
	checks := append(slices.Clip(e.checks), movedIn...)
	snap.Fork()
	p.removing = e.Name
	defer func() { p.removing = "" }()
	if err := snap.RemoveNode(e.Name); err != nil {
		snap.Revert()
		return nil, err
	}
	for i, info := range moving {
		var gc *simulator.GroupCheck
		var dest string
		if script != nil {
			dest = script.dests[i]
		} else {
			if gc = checks[i]; gc == nil || gc.Stateful() {
				// Pod affinity or spread: judged against the cluster as the
				// earlier removals left it.
				gc = c.CheckBoundPod(ctx, info)
			}
			dest = p.destination(ctx, gc)
			p.noteDest(gc, dest)
		}
		if dest == "" {
			snap.Revert()
			return info.Pod, nil
		}
		// The pod itself goes there: no plugin reads a placed pod's node
		// name, and its parsed terms and requests are reused.
		if err := snap.AddPod(info, dest); err != nil {
			snap.Revert()
			return nil, err
		}
		if gc != nil && p.later[dest] {
			p.checks[info] = gc
		}
	}
	snap.Commit()
	p.gone[e.Name] = true
	return nil, nil
}

// precheck runs PreFilter for the pods of a batch of candidates that may
// go, spread over the cores, before their removals are simulated one by
// one. A check stays valid through the simulation unless it depends on
// where other pods are (pod affinity, topology spread): those are redone in
// turn. Checks are of the pods themselves, not of copies with no node name
// (simulator.Checker.CheckBoundPod).
func (p *planner) precheck(ctx context.Context, evs []evaluated) {
	c := p.in.Checker
	// Fill the snapshot's lazily built lists before reading in parallel.
	_, _ = c.Snapshot().NodeInfos().HavePodsWithAffinityList()
	type job struct{ e, i int }
	var jobs []job
	// shared are the pods that take the check of an equivalent pod.
	var shared []job
	first := map[string]job{}
	for ei := range evs {
		e := &evs[ei]
		e.checks = make([]*simulator.GroupCheck, len(e.moving))
		if e.pods.Blocker != nil {
			continue
		}
		for i, info := range e.moving {
			if p.keys == nil {
				jobs = append(jobs, job{ei, i})
				continue
			}
			key := p.keys.Key(info.Pod)
			if j, ok := first[key]; ok {
				shared = append(shared, j, job{ei, i})
				continue
			}
			first[key] = job{ei, i}
			jobs = append(jobs, job{ei, i})
		}
	}
	queue := make(chan job, len(jobs))
	for _, j := range jobs {
		queue <- j
	}
	close(queue)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Go(func() {
			for j := range queue {
				evs[j.e].checks[j.i] = c.CheckBoundPod(ctx, evs[j.e].moving[j.i])
			}
		})
	}
	wg.Wait()
	for i := 0; i < len(shared); i += 2 {
		from, to := shared[i], shared[i+1]
		evs[to.e].checks[to.i] = evs[from.e].checks[from.i]
	}
}

// Utilization is the larger of requested cpu over allocatable cpu and
// requested memory over allocatable memory, less the pods ig leaves out.
func Utilization(ni *framework.NodeInfo, ig Ignored) float64 {
	cpu, mem := requested(ni, ig, func(r fwk.Resource) (int64, int64) { return r.GetMilliCPU(), r.GetMemory() })
	var u float64
	if a := ni.Allocatable.MilliCPU; a > 0 {
		u = float64(cpu) / float64(a)
	}
	if a := ni.Allocatable.Memory; a > 0 {
		u = max(u, float64(mem)/float64(a))
	}
	return u
}

// GPUResource is the extended resource of GPUs, as Cluster Autoscaler's
// providers name it.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

// GPUUtilization is the share of the node's allocatable GPUs its pods
// request; gpu is false for a node without allocatable GPUs.
func GPUUtilization(ni *framework.NodeInfo, ig Ignored) (util float64, gpu bool) {
	a := ni.Allocatable.ScalarResources[GPUResource]
	if a <= 0 {
		return 0, false
	}
	req, _ := requested(ni, ig, func(r fwk.Resource) (int64, int64) { return r.GetScalarResources()[GPUResource], 0 })
	return float64(req) / float64(a), true
}

// Ignored says which pods utilization leaves out, as Cluster Autoscaler's
// --ignore-daemonsets-utilization and --ignore-mirror-pods-utilization.
type Ignored struct {
	DaemonSets, MirrorPods bool
}

func (ig Ignored) ignores(p *corev1.Pod) bool {
	return ig.DaemonSets && IsDaemonSetPod(p) || ig.MirrorPods && IsMirror(p)
}

// requested sums two quantities (pick) of the node's requests, less those
// of the pods ig leaves out.
func requested(ni *framework.NodeInfo, ig Ignored, pick func(fwk.Resource) (int64, int64)) (int64, int64) {
	a, b := pick(ni.Requested)
	if ig == (Ignored{}) {
		return a, b
	}
	for _, pi := range ni.Pods {
		if ig.ignores(pi.GetPod()) {
			r := pi.CalculateResource().Resource
			da, db := pick(r)
			a, b = a-da, b-db
		}
	}
	return a, b
}
