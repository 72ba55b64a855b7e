package core

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

// scaleDownReport is what the scale-down step saw and did.
type scaleDownReport struct {
	plan              *scaledown.Plan
	reused            bool
	notEvenCandidates []scaledown.Unremovable
	cooldown          string
	started           []string
}

// scaleDown plans which nodes can go, tracks how long they have been
// unneeded, soft-taints them, and starts removing those unneeded long
// enough, unless scale-down is cooling down.
func (l *NodeLoop) scaleDown(ctx context.Context, o *observation, report *iterationReport) error {
	if !l.opts.ScaleDown.Enabled {
		return nil
	}
	start := l.clock.Now()
	defer func() { l.cfg.Metrics.observe("scaleDown", l.clock.Since(start)) }()
	sd := &scaleDownReport{}
	report.scaleDown = sd
	in, err := l.scaleDownInput(o, sd)
	if err != nil {
		return err
	}
	// Headroom occupies room in the plan like a pod: no node goes if the
	// headroom would no longer fit.
	snap := l.checker.Snapshot()
	snap.Fork()
	in.Salt, err = l.placeHeadroom(ctx, o.headroom)
	if err != nil {
		snap.Revert()
		return err
	}
	plan, reused, err := l.sdPlanner.Plan(ctx, in)
	snap.Revert()
	if err != nil {
		return err
	}
	sd.plan, sd.reused = plan, reused
	l.cfg.Metrics.observe("scaleDown:plan", l.clock.Since(start))
	nodes := nodesByName(o.nodes)
	l.trackUnneeded(o.now, plan, nodes)
	l.softTaint(ctx, plan, nodes)
	sd.cooldown = l.scaleDownCooldown(o.now, report)
	cooling := 0.0
	if sd.cooldown != "" {
		cooling = 1
	}
	l.cfg.Metrics.ScaleDownInCooldown.Set(cooling)
	l.cfg.Metrics.ca.scaleDownInCooldown.Set(cooling)
	if sd.cooldown == "" {
		sd.started = l.startRemovals(o, plan, nodes)
	}
	l.scaleDownDue = l.nextScaleDownDue(o, plan, sd.started)
	return nil
}

// nextScaleDownDue is when the first unneeded node not being removed will
// have been unneeded long enough and no cooldown holds it, or zero: the
// loop wakes then rather than at its next scan.
func (l *NodeLoop) nextScaleDownDue(o *observation, plan *scaledown.Plan, started []string) time.Time {
	var due time.Time
	for _, u := range plan.Unneeded {
		t, ok := l.unneededDue(o, u)
		if !ok || slices.Contains(started, u.Node) {
			continue
		}
		if t.After(o.now) && (due.IsZero() || t.Before(due)) {
			due = t
		}
	}
	if due.IsZero() {
		return due
	}
	for _, c := range l.cooldowns() {
		if end := c.since.Add(c.delay); end.After(due) {
			due = end
		}
	}
	return due
}

// scaleDownInput gathers the candidates: nodes of a node group that no
// annotation or removal in progress keeps.
func (l *NodeLoop) scaleDownInput(o *observation, sd *scaleDownReport) (scaledown.Input, error) {
	deleting, perGroup := l.actuator.deleting()
	busy := map[string]bool{}
	for _, n := range deleting {
		busy[n] = true
	}
	in := scaledown.Input{
		Checker: l.checker, Groups: map[string]scaledown.GroupSize{}, Deleting: deleting, Now: o.now,
		Owners: l.ownerExists,
		Rules: scaledown.RuleOptions{SkipNodesWithSystemPods: l.opts.ScaleDown.SkipNodesWithSystemPods,
			SkipNodesWithLocalStorage:         l.opts.ScaleDown.SkipNodesWithLocalStorage,
			SkipNodesWithCustomControllerPods: l.opts.ScaleDown.SkipNodesWithCustomControllerPods},
		IgnoreDaemonSetsUtilization: l.opts.ScaleDown.IgnoreDaemonSetsUtilization,
		IgnoreMirrorPodsUtilization: l.opts.ScaleDown.IgnoreMirrorPodsUtilization,
		KeepUnready:                 l.opts.ScaleDown.KeepUnready, MaxNonEmptyUnneeded: l.opts.ScaleDown.MaxNonEmptyUnneeded,
	}
	for _, g := range o.groups {
		if g.problem == "" {
			in.Groups[g.group.Id()] = scaledown.GroupSize{Target: g.target - perGroup[g.group.Id()], Min: g.group.MinSize()}
		}
	}
	for _, n := range o.nodes {
		gid := o.groupOfNode[n.Name]
		if _, usable := in.Groups[gid]; !usable {
			continue
		}
		switch {
		case n.Annotations[scaledown.ScaleDownDisabledAnnotation] == "true":
			sd.notEvenCandidates = append(sd.notEvenCandidates, scaledown.Unremovable{Node: n.Name, Reason: "ScaleDownDisabledAnnotation",
				Detail: scaledown.ScaleDownDisabledAnnotation + "=true"})
		case busy[n.Name] || hasTaint(n, scaledown.ToBeDeletedTaint):
			sd.notEvenCandidates = append(sd.notEvenCandidates, scaledown.Unremovable{Node: n.Name, Reason: "CurrentlyBeingDeleted"})
		case l.checker.Snapshot().NodeInfo(n.Name) != nil:
			own := l.groupOptions(o, gid)
			in.Candidates = append(in.Candidates, scaledown.Candidate{Name: n.Name, Group: gid, Threshold: own.ScaleDownUtilizationThreshold,
				GPUThreshold: own.ScaleDownGpuUtilizationThreshold, Unready: !o.ready(n.Name)})
		}
	}
	pdbs, err := l.pdbs.List(labels.Everything())
	if err != nil {
		return in, errors.Join(errAPI, err)
	}
	in.PDBs = pdbs
	return in, nil
}

// groupOptions are the group's own scale-down options, or the flags'.
func (l *NodeLoop) groupOptions(o *observation, id string) cloudprovider.NodeGroupAutoscalingOptions {
	def := cloudprovider.NodeGroupAutoscalingOptions{
		ScaleDownUtilizationThreshold:    l.opts.ScaleDown.UtilizationThreshold,
		ScaleDownGpuUtilizationThreshold: l.opts.ScaleDown.GPUUtilizationThreshold,
		ScaleDownUnneededTime:            l.opts.ScaleDown.UnneededTime,
		ScaleDownUnreadyTime:             l.opts.ScaleDown.UnreadyTime,
		MaxNodeProvisionTime:             l.opts.ClusterState.MaxNodeProvisionTime,
		IgnoreDaemonSetsUtilization:      l.opts.ScaleDown.IgnoreDaemonSetsUtilization,
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

// ownerExists looks a pod's controller up in the informers.
func (l *NodeLoop) ownerExists(ns string, ref metav1.OwnerReference) (exists, known bool) {
	var err error
	switch ref.Kind {
	case "ReplicaSet":
		_, err = l.replicaSets.ReplicaSets(ns).Get(ref.Name)
	case "ReplicationController":
		_, err = l.rcs.ReplicationControllers(ns).Get(ref.Name)
	case "StatefulSet":
		_, err = l.statefulSets.StatefulSets(ns).Get(ref.Name)
	case "Job":
		_, err = l.jobs.Jobs(ns).Get(ref.Name)
	default:
		return false, false
	}
	return err == nil, true
}

// trackUnneeded keeps, per unneeded node, since when it has been unneeded
// without a break. After a restart the time comes from the node's soft
// taint, so the unneeded time is not started over.
func (l *NodeLoop) trackUnneeded(now time.Time, plan *scaledown.Plan, nodes map[string]*corev1.Node) {
	since := make(map[string]time.Time, len(plan.Unneeded))
	for _, u := range plan.Unneeded {
		t, ok := l.unneededSince[u.Node]
		if !ok {
			t = now
			if n := nodes[u.Node]; n != nil {
				if tainted, found := taintValueTime(n, scaledown.DeletionCandidateTaint); found && !tainted.IsZero() && tainted.Before(now) {
					t = tainted
				}
			}
		}
		since[u.Node] = t
	}
	l.unneededSince = since
	l.cfg.Metrics.UnneededNodes.Set(float64(len(plan.Unneeded)))
	l.cfg.Metrics.ca.unneededNodesCount.Set(float64(len(plan.Unneeded)))
}

// softTaint puts the PreferNoSchedule deletion candidate taint on unneeded
// nodes and takes it off nodes needed again, the latter first, within one
// budget of --max-bulk-soft-taint-count writes and
// --max-bulk-soft-taint-time, as Cluster Autoscaler does: a burst of nodes
// changing their minds never stalls the loop; the rest wait for the next
// iterations.
func (l *NodeLoop) softTaint(ctx context.Context, plan *scaledown.Plan, nodes map[string]*corev1.Node) {
	remove, add := scaledown.SoftTaintChanges(l.softTaintNodes(plan, nodes))
	budget := scaledown.NewBudget(l.opts.ScaleDown.MaxBulkSoftTaint, l.clock.Now(), l.opts.ScaleDown.MaxBulkSoftTaintTime)
	done := l.writeWithin(ctx, budget, remove, "remove", func(name string) error {
		return removeTaint(ctx, l.cfg.Client, name, scaledown.DeletionCandidateTaint)
	})
	done += l.writeWithin(ctx, budget, add, "add", func(name string) error {
		return addTaint(ctx, l.cfg.Client, name, deletionCandidate(l.unneededSince[name]))
	})
	if left := len(remove) + len(add) - done; left > 0 {
		klog.FromContext(ctx).V(2).Info("Soft-taint budget spent; the other nodes wait for the next iterations", "written", done, "left", left)
	}
}

// writeWithin writes the deletion candidate taint of nodes while the budget
// lasts, and returns how many it wrote (or tried to).
func (l *NodeLoop) writeWithin(ctx context.Context, budget *scaledown.Budget, nodes []string, what string, write func(string) error) int {
	n := 0
	for _, name := range nodes {
		if !budget.Take(l.clock.Now()) {
			break
		}
		n++
		if err := write(name); err != nil {
			klog.FromContext(ctx).Error(err, "Could not "+what+" the deletion candidate taint", "node", name)
		}
	}
	return n
}

// softTaintNodes is what the soft-taint step needs to know of each node.
func (l *NodeLoop) softTaintNodes(plan *scaledown.Plan, nodes map[string]*corev1.Node) []scaledown.SoftTaintNode {
	deleting, _ := l.actuator.deleting()
	busy := make(map[string]bool, len(deleting))
	for _, d := range deleting {
		busy[d] = true
	}
	out := make([]scaledown.SoftTaintNode, 0, len(nodes))
	seen := make(map[string]bool, len(plan.Unneeded))
	for _, u := range plan.Unneeded {
		if n := nodes[u.Node]; n != nil {
			seen[u.Node] = true
			out = append(out, l.softTaintNode(n, true, busy))
		}
	}
	for name, n := range nodes {
		if !seen[name] {
			out = append(out, l.softTaintNode(n, false, busy))
		}
	}
	return out
}

func (l *NodeLoop) softTaintNode(n *corev1.Node, unneeded bool, busy map[string]bool) scaledown.SoftTaintNode {
	return scaledown.SoftTaintNode{Name: n.Name, Tainted: hasTaint(n, scaledown.DeletionCandidateTaint), Unneeded: unneeded,
		Removing: busy[n.Name] || hasTaint(n, scaledown.ToBeDeletedTaint)}
}

// scaleDownCooldown says why scale-down must wait, or "".
func (l *NodeLoop) scaleDownCooldown(now time.Time, report *iterationReport) string {
	if report.scaledUp {
		return "a scale-up was requested in this iteration"
	}
	for _, c := range l.cooldowns() {
		if !c.since.IsZero() && now.Before(c.since.Add(c.delay)) {
			return c.why
		}
	}
	return ""
}

// cooldown is one of scale-down's waits: delay after the last event since.
type cooldown struct {
	since time.Time
	delay time.Duration
	why   string
}

// cooldowns are scale-down's waits after a scale-up, a removal and a failed
// removal.
func (l *NodeLoop) cooldowns() []cooldown {
	lastDelete, lastFailure := l.actuator.times()
	sd := l.opts.ScaleDown
	return []cooldown{
		{l.lastScaleUp, sd.DelayAfterAdd, "--scale-down-delay-after-add since the last scale-up"},
		{lastDelete, sd.DelayAfterDelete, "--scale-down-delay-after-delete since the last removal"},
		{lastFailure, sd.DelayAfterFailure, "--scale-down-delay-after-failure since the last failed removal"},
	}
}

// startRemovals starts removing the nodes unneeded (or unready) for long
// enough, empty ones first, within the parallelism budgets and the cluster's
// minimum cores and memory.
func (l *NodeLoop) startRemovals(o *observation, plan *scaledown.Plan, nodes map[string]*corev1.Node) []string {
	sd := l.opts.ScaleDown
	all, drains := l.actuator.counts()
	budget, drainBudget := sd.MaxParallelism-all, sd.MaxDrainParallelism-drains
	cores, memory := clusterCapacity(o.nodes)
	var started []string
	for _, u := range plan.Unneeded {
		if budget <= 0 {
			break
		}
		n, g := nodes[u.Node], o.group(u.Group)
		if n == nil || g == nil || !l.unneededLongEnough(o, u) || (!u.Empty() && drainBudget <= 0) {
			continue
		}
		c, m := n.Status.Capacity.Cpu().MilliValue(), n.Status.Capacity.Memory().Value()
		if cores-c < sd.MinMilliCores || memory-m < sd.MinMemoryBytes {
			continue
		}
		cores, memory = cores-c, memory-m
		budget--
		if !u.Empty() {
			drainBudget--
		}
		kind := "underutilized"
		switch {
		case u.Unready:
			kind = "unready"
		case len(realPods(u.Pods.ToMove)) == 0:
			kind = "empty"
		}
		l.actuator.start(l.lifetime, removal{node: n, group: g.group, pods: realPods(u.Pods.ToMove), daemonSet: u.Pods.DaemonSet, kind: kind})
		started = append(started, u.Node)
	}
	return started
}

func (l *NodeLoop) unneededLongEnough(o *observation, u scaledown.Unneeded) bool {
	due, ok := l.unneededDue(o, u)
	return ok && !o.now.Before(due)
}

// unneededDue is when a node unneeded (or unready) since it was first seen
// so will have been so long enough for its group; false when it is not
// tracked as unneeded.
func (l *NodeLoop) unneededDue(o *observation, u scaledown.Unneeded) (time.Time, bool) {
	since, ok := l.unneededSince[u.Node]
	if !ok {
		return time.Time{}, false
	}
	opts := l.groupOptions(o, u.Group)
	need := opts.ScaleDownUnneededTime
	if u.Unready {
		need = opts.ScaleDownUnreadyTime
	}
	return since.Add(need), true
}

// placeHeadroom puts the headroom pods on the free capacity of the
// snapshot (forked by the caller), in an order of their own, and returns
// what identifies the placement for the planner's memory: which pods, with
// what scheduling fields (their equivalence keys), went on which node.
func (l *NodeLoop) placeHeadroom(ctx context.Context, pods []*corev1.Pod) (string, error) {
	if len(pods) == 0 {
		return "", nil
	}
	pods = slices.SortedFunc(slices.Values(pods), func(a, b *corev1.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	snap := l.checker.Snapshot()
	var placed []string
	for _, g := range l.keys.Group(pods) {
		gc, err := l.checker.CheckGroup(ctx, g)
		if err != nil {
			return "", err
		}
		done, _, err := l.checker.PlaceGroup(ctx, gc, g.Pods, snap.Infos())
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

// realPods drops the pictured pods: they have nothing to evict.
func realPods(pods []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		if !pictured(p) {
			out = append(out, p)
		}
	}
	return out
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

// cleanUpTaints runs once when the loop starts acting: a ToBeDeleted taint left by
// a drain that was interrupted (tidal killed) has no owner any more, so it
// comes off and the node is schedulable again. Soft taints stay: their
// value tells the unneeded tracking since when the node is unneeded, and
// the first plan takes them off nodes that are needed.
func (l *NodeLoop) cleanUpTaints(ctx context.Context) {
	nodes, err := l.nodes.List(labels.Everything())
	if err != nil {
		klog.FromContext(ctx).Error(err, "Could not list nodes to clean up taints")
		return
	}
	for _, n := range nodes {
		if !markedNode(n) {
			continue
		}
		klog.FromContext(ctx).Info("Removing a deletion taint (and tidal's cordon) no removal owns", "node", n.Name)
		if err := unmarkForRemoval(ctx, l.cfg.Client, n.Name); err != nil {
			klog.FromContext(ctx).Error(err, "Could not remove a stale deletion taint", "node", n.Name)
		}
	}
}
