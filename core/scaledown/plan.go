package scaledown

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
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
	UnexpectedError         Reason = "UnexpectedError"
)

// Candidate is a node the loop may remove: it belongs to a node group and
// nothing outside the simulation keeps it (annotations, cooldowns).
type Candidate struct {
	Name  string
	Group string
	// Threshold is the group's utilization threshold.
	Threshold float64
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
	// Deleting are nodes being removed already: no pod may move there.
	Deleting []string
	PDBs     []*policyv1.PodDisruptionBudget
	Owners   OwnerExists
	Rules    RuleOptions
	// IgnoreDaemonSetsUtilization leaves DaemonSet and mirror pods out of
	// utilization.
	IgnoreDaemonSetsUtilization bool
	Now                         time.Time
	// Salt names what the caller changed in the snapshot in a fork (such
	// as pods placed to keep headroom): the planner's memory keys on it.
	Salt string
}

// Plan is which candidates can go now and why the others cannot.
type Plan struct {
	Unneeded    []Unneeded
	Unremovable []Unremovable
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
// snapshot is restored before Decide returns.
func Decide(ctx context.Context, in Input) (*Plan, error) {
	snap := in.Checker.Snapshot()
	snap.Fork()
	defer snap.Revert()
	for _, name := range in.Deleting {
		if snap.NodeInfo(name) != nil {
			if err := snap.RemoveNode(name); err != nil {
				return nil, err
			}
		}
	}
	p := &planner{in: in, plan: &Plan{}, pdbs: newBudgets(in.PDBs), removed: map[string]int{},
		byKind: map[string][]fwk.NodeInfo{}, hints: map[string]int{}, gone: map[string]bool{},
		checks: map[*framework.PodInfo]*simulator.GroupCheck{}}
	ordered := p.order()
	p.precheck(ctx, ordered)
	for _, c := range ordered {
		if err := p.consider(ctx, c); err != nil {
			return nil, err
		}
	}
	return p.plan, nil
}

type planner struct {
	in      Input
	plan    *Plan
	pdbs    *budgets
	removed map[string]int
	// byKind lists, per kind of pod (tolerations and node selection), the
	// nodes whose taints and labels admit it: those never change during a
	// plan, so scans skip nodes that would refuse the kind anyway. hints
	// remember where the kind's last pod fitted. gone are the nodes the
	// plan removed.
	byKind map[string][]fwk.NodeInfo
	hints  map[string]int
	gone   map[string]bool
	// removing is the node whose removal is being simulated.
	removing string
	// checks keeps the check of every pod moved in this plan, for when it
	// must move again (its new node is removed later).
	checks map[*framework.PodInfo]*simulator.GroupCheck
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
		e := evaluated{Candidate: c, util: Utilization(ni, p.in.IgnoreDaemonSetsUtilization)}
		if !e.Unready && e.util >= e.Threshold {
			p.plan.Unremovable = append(p.plan.Unremovable, Unremovable{Node: c.Name, Reason: NotUnderutilized, Utilization: e.util,
				Detail: fmt.Sprintf("utilization %.2f is not below %.2f", e.util, e.Threshold)})
			continue
		}
		pods := podsOf(ni)
		e.pods = ClassifyPods(pods, p.in.Rules, p.in.Owners, p.pdbs.covered, p.in.Now)
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

func (p *planner) consider(ctx context.Context, e evaluated) error {
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
	if b := p.pdbs.reserve(e.pods.ToMove); b != nil {
		stay(BlockedByPod, b, "")
		return nil
	}
	unplaced, err := p.simulateRemoval(ctx, e)
	if err != nil {
		return err
	}
	if unplaced != nil {
		p.pdbs.release(e.pods.ToMove)
		stay(NoPlaceToMovePods, nil, fmt.Sprintf("pod %s/%s fits on no other node", unplaced.Namespace, unplaced.Name))
		return nil
	}
	p.removed[e.Group]++
	p.plan.Unneeded = append(p.plan.Unneeded, Unneeded{Node: e.Name, Group: e.Group, Utilization: e.util, Unready: e.Unready, Pods: e.pods})
	return nil
}

// simulateRemoval takes the node out of the snapshot and places its pods on
// the other nodes. On success the change stays (later candidates see it);
// otherwise it is undone and the first pod that did not fit is returned.
func (p *planner) simulateRemoval(ctx context.Context, e evaluated) (*corev1.Pod, error) {
	c := p.in.Checker
	snap := c.Snapshot()
	moving, checks := e.moving, e.checks
	for _, pi := range snap.NodeInfo(e.Name).Pods {
		if info, ok := pi.(*framework.PodInfo); ok && !e.original[info.Pod] {
			moving, checks = append(moving, info), append(checks, p.checks[info])
		}
	}
	snap.Fork()
	p.removing = e.Name
	defer func() { p.removing = "" }()
	if err := snap.RemoveNode(e.Name); err != nil {
		snap.Revert()
		return nil, err
	}
	for i, info := range moving {
		gc := checks[i]
		if gc == nil || gc.Stateful() {
			// Pod affinity or spread: judged against the cluster as the
			// earlier removals left it.
			gc = c.CheckPod(ctx, movedPod(info))
		}
		dest := p.destination(ctx, gc)
		if dest == "" {
			snap.Revert()
			return info.Pod, nil
		}
		if err := c.PlaceOnly(gc.PodCheck, dest); err != nil {
			snap.Revert()
			return nil, err
		}
		p.checks[gc.Info] = gc
	}
	snap.Commit()
	p.gone[e.Name] = true
	return nil, nil
}

// destination finds a node for a moved pod among the nodes left that admit
// its kind, starting where the kind's last pod fitted.
func (p *planner) destination(ctx context.Context, gc *simulator.GroupCheck) string {
	kind := placementKind(gc.Pod)
	nodes, ok := p.byKind[kind]
	if !ok {
		nodes = admitting(gc.Pod, p.in.Checker.Snapshot().Infos())
		p.byKind[kind] = nodes
	}
	n := len(nodes)
	if n == 0 || gc.Status != nil {
		return ""
	}
	start := min(p.hints[kind], n-1)
	for i := 0; i < n; i++ {
		idx := (start + i) % n
		ni := nodes[idx]
		name := ni.Node().Name
		if p.gone[name] || name == p.removing || !gc.ResourcesFit(ni) || !p.in.Checker.Filter(ctx, gc.PodCheck, ni).IsSuccess() {
			continue
		}
		p.hints[kind] = idx
		return name
	}
	return ""
}

// placementKind groups pods that the same nodes refuse for reasons other
// than room: tolerations, node selector and affinity.
func placementKind(p *corev1.Pod) string {
	if len(p.Spec.Tolerations) == 0 && len(p.Spec.NodeSelector) == 0 && p.Spec.Affinity == nil {
		return ""
	}
	return fmt.Sprint(p.Spec.Tolerations, p.Spec.NodeSelector, p.Spec.Affinity)
}

// precheck runs PreFilter for the pods of every candidate that may go,
// spread over the cores, before the removals are simulated one by one. A
// check stays valid through the simulation unless it depends on where other
// pods are (pod affinity, topology spread): those are redone in turn.
func (p *planner) precheck(ctx context.Context, evs []evaluated) {
	c := p.in.Checker
	// Fill the snapshot's lazily built lists before reading in parallel.
	_, _ = c.Snapshot().NodeInfos().HavePodsWithAffinityList()
	type job struct{ e, i int }
	jobs := make(chan job, 256)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Go(func() {
			for j := range jobs {
				evs[j.e].checks[j.i] = c.CheckPod(ctx, movedPod(evs[j.e].moving[j.i]))
			}
		})
	}
	for ei := range evs {
		e := &evs[ei]
		e.checks = make([]*simulator.GroupCheck, len(e.moving))
		if e.pods.Blocker != nil {
			continue
		}
		for i := range e.moving {
			jobs <- job{ei, i}
		}
	}
	close(jobs)
	wg.Wait()
}

// admitting keeps the nodes whose taints the pod tolerates and whose labels
// match its node selector and required node affinity. It only narrows the
// search: the scheduler's Filter plugins still judge every placement.
func admitting(p *corev1.Pod, nodes []fwk.NodeInfo) []fwk.NodeInfo {
	affinity := nodeaffinity.GetRequiredNodeAffinity(p)
	out := make([]fwk.NodeInfo, 0, len(nodes))
	for _, ni := range nodes {
		n := ni.Node()
		if ok, err := affinity.Match(n); err != nil || !ok {
			continue
		}
		_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, p.Spec.Tolerations, func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false)
		if !untolerated {
			out = append(out, ni)
		}
	}
	return out
}

// movedPod is the pod as the scheduler would see it after eviction: no
// node. The parsed terms and computed requests are kept.
func movedPod(info *framework.PodInfo) *framework.PodInfo {
	pod := *info.Pod
	pod.Spec.NodeName = ""
	c := *info
	c.Pod = &pod
	return &c
}

// parsed returns the node's parsed pods for pods, in the same order.
func parsed(ni *framework.NodeInfo, pods []*corev1.Pod) []*framework.PodInfo {
	byPod := make(map[*corev1.Pod]*framework.PodInfo, len(ni.Pods))
	for _, pi := range ni.Pods {
		if info, ok := pi.(*framework.PodInfo); ok {
			byPod[info.Pod] = info
		}
	}
	out := make([]*framework.PodInfo, len(pods))
	for i, p := range pods {
		if out[i] = byPod[p]; out[i] == nil {
			out[i], _ = framework.NewPodInfo(p)
		}
	}
	return out
}

func podsOf(ni *framework.NodeInfo) []*corev1.Pod {
	out := make([]*corev1.Pod, len(ni.Pods))
	for i, pi := range ni.Pods {
		out[i] = pi.GetPod()
	}
	return out
}

// Utilization is the larger of requested cpu over allocatable cpu and
// requested memory over allocatable memory. With ignoreDaemonSets,
// DaemonSet and mirror pods are left out.
func Utilization(ni *framework.NodeInfo, ignoreDaemonSets bool) float64 {
	cpu, mem := ni.Requested.MilliCPU, ni.Requested.Memory
	if ignoreDaemonSets {
		for _, pi := range ni.Pods {
			if p := pi.GetPod(); IsDaemonSetPod(p) || isMirror(p) {
				r := pi.CalculateResource().Resource
				cpu -= r.GetMilliCPU()
				mem -= r.GetMemory()
			}
		}
	}
	var u float64
	if a := ni.Allocatable.MilliCPU; a > 0 {
		u = float64(cpu) / float64(a)
	}
	if a := ni.Allocatable.Memory; a > 0 {
		u = max(u, float64(mem)/float64(a))
	}
	return u
}

// budgets tracks how many more pods each PDB lets go in this plan.
type budgets struct {
	pdbs      []*policyv1.PodDisruptionBudget
	selectors []labels.Selector
	remaining []int32
}

func newBudgets(pdbs []*policyv1.PodDisruptionBudget) *budgets {
	b := &budgets{}
	for _, pdb := range pdbs {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || pdb.Spec.Selector == nil {
			// A PDB whose selector cannot be read protects nothing
			// predictably: treat it as matching nothing, as the
			// eviction API will still enforce it.
			sel = labels.Nothing()
		}
		b.pdbs = append(b.pdbs, pdb)
		b.selectors = append(b.selectors, sel)
		b.remaining = append(b.remaining, pdb.Status.DisruptionsAllowed)
	}
	return b
}

func (b *budgets) matches(i int, p *corev1.Pod) bool {
	return b.pdbs[i].Namespace == p.Namespace && b.selectors[i].Matches(labels.Set(p.Labels))
}

func (b *budgets) covered(p *corev1.Pod) bool {
	for i := range b.pdbs {
		if b.matches(i, p) {
			return true
		}
	}
	return false
}

// reserve takes one disruption per pod from each PDB that covers it, or,
// when a PDB has too few left, takes nothing and names the pod.
func (b *budgets) reserve(pods []*corev1.Pod) *Blocker {
	need := make([]int32, len(b.pdbs))
	for _, p := range pods {
		for i := range b.pdbs {
			if b.matches(i, p) {
				need[i]++
				if need[i] > b.remaining[i] {
					return &Blocker{Pod: p, Reason: NotEnoughPdb, Detail: fmt.Sprintf("PodDisruptionBudget %s allows %d more disruption(s)",
						b.pdbs[i].Name, b.remaining[i])}
				}
			}
		}
	}
	for i, n := range need {
		b.remaining[i] -= n
	}
	return nil
}

func (b *budgets) release(pods []*corev1.Pod) {
	for _, p := range pods {
		for i := range b.pdbs {
			if b.matches(i, p) {
				b.remaining[i]++
			}
		}
	}
}
