package scaleup

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tidal-autoscaler/tidal/simulator"
)

// Reuse is what one decision's filter of pending pods hands the next, so
// that the next filter costs in proportion to what changed in between.
// It is a value: DecideFrom takes the last one and returns the next, and
// the zero Reuse reuses nothing.
//
// The filter places pod groups one after another on the ready nodes. A
// group's placements are taken again, without searching, when searching
// would find them again. That is sure for a local group (see local): its
// search is first-fit along the ready nodes, each node taking pods until
// it refuses one, and whether a node takes a pod depends on that node
// alone. Its placements then stand when
//
//   - the group is the same: its key and its pods, in order;
//   - every node it placed pods on is as it was when it did (the same
//     fingerprint, the same pods placed there by the groups before it) and
//     the nodes are in the same order;
//   - every other node the search would look at before its last placement
//     (every node, when some of its pods fitted nowhere) is as it was, so
//     it refuses again, or is checked now and refuses.
//
// The ready nodes are fingerprinted as the groups find them: after the
// upcoming copies of registered nodes still starting took the pods
// nominated to them, before the pods of Input.Cleared are placed on their
// nodes, which is done afresh each time: a ready node where those pods are
// placed otherwise than the last time is checked as if it had changed. The
// copies are filled after the groups, afresh.
//
// Only the nodes that changed are checked, so a small change costs little.
// When not all of them stand, the placements ahead of the first node that
// changed are kept and the search resumes after them (see standing); a
// group that is not local is searched afresh. The estimates for the pods
// left are made afresh.
type Reuse struct {
	// checker and listers are those the placements were found with: with
	// another checker, or other objects in its listers, nothing is reused.
	checker *simulator.Checker
	listers uint64
	nodes   nodeList
	groups  []groupRun
	// cleared are the placements of Input.Cleared's pods on ready nodes.
	cleared []simulator.Placed
	// hashes memoizes nodeHash by Node object (informers hand out a new
	// object for every change; the hash is of the content).
	hashes map[*corev1.Node]uint64
	// pods memoizes podsHash by NodeInfo while its generation, which
	// every change of the node or its pods renews, stays the same.
	pods simulator.PodsMemo
}

// nodeList is the ready nodes at the start of a filter, in the order the
// search walks them, with each one's fingerprint.
type nodeList struct {
	names  []string
	at     map[string]int
	prints []uint64
}

// groupRun is how one pod group was placed.
type groupRun struct {
	key  string
	pods []types.UID
	// local tells that the placements may be reused (see local).
	local bool
	// placed are the placements of the first len(placed) pods, in order;
	// the others fitted nowhere.
	placed []simulator.Placed
}

// filterReuse is one filter's use of the last Reuse, building the next.
type filterReuse struct {
	prev, next Reuse
	byKey      map[string]int
	// changed are the nodes of the list that are not as they were: new,
	// moved ahead of others, or with another fingerprint.
	changed map[string]bool
	// diff sums, per node, the pods the groups placed so far put there,
	// less those the earlier groups of prev had put there at that point:
	// nonzero where they differ.
	diff map[string]uint64
	// accounted counts the groups of prev whose placements diff holds.
	accounted int
	// unbound are reused placements not yet bound in the snapshot: they
	// are bound when something reads the nodes.
	unbound []simulator.Placed
	// reused and resumed count the groups whose placements were reused,
	// wholly or in part.
	reused, resumed int
	// uniqueHosts is true when no two nodes of the snapshot share a
	// hostname label: anti-affinity per hostname is then per node.
	uniqueHosts bool
}

// newFilterReuse compares the ready nodes with prev's; starting names
// those the decision took nominated pods from (see fingerprint).
func newFilterReuse(c *simulator.Checker, ready []fwk.NodeInfo, prev Reuse, starting map[string]bool) *filterReuse {
	if prev.checker != c || prev.listers != c.ListerVersion() {
		prev = Reuse{}
	}
	r := &filterReuse{prev: prev, byKey: make(map[string]int, len(prev.groups)), changed: map[string]bool{}, diff: map[string]uint64{}}
	r.next = Reuse{checker: c, listers: c.ListerVersion(), hashes: make(map[*corev1.Node]uint64, len(ready)),
		pods: make(simulator.PodsMemo, len(ready))}
	r.uniqueHosts = uniqueHostnames(c.Snapshot().Infos())
	r.next.nodes = nodeList{names: make([]string, len(ready)), at: make(map[string]int, len(ready)), prints: make([]uint64, len(ready))}
	for i, g := range prev.groups {
		r.byKey[g.key] = i
	}
	oldAt := make([]int, 0, len(ready))
	for i, ni := range ready {
		name := ni.Node().Name
		r.next.nodes.names[i], r.next.nodes.at[name] = name, i
		r.next.nodes.prints[i] = r.fingerprint(ni, starting[name])
		j, ok := prev.nodes.at[name]
		if !ok || prev.nodes.prints[j] != r.next.nodes.prints[i] {
			r.changed[name] = true
			continue
		}
		oldAt = append(oldAt, j)
	}
	for _, j := range moved(oldAt) {
		r.changed[prev.nodes.names[j]] = true
	}
	return r
}

// fingerprint hashes what decides whether a local pod fits the node. The
// hash of its pods is memoized unless the decision moved some of them
// already (moved): the memo holds for the node as the decision's end
// restores it.
func (r *filterReuse) fingerprint(ni fwk.NodeInfo, moved bool) uint64 {
	node := ni.Node()
	h, ok := r.prev.hashes[node]
	if !ok {
		h = simulator.NodeHash(node)
	}
	r.next.hashes[node] = h
	if moved {
		return simulator.NodeInfoHash(h^simulator.PodsHash(ni), ni)
	}
	return simulator.NodeInfoHash(h^r.next.pods.Hash(r.prev.pods, ni), ni)
}

// clearedOn takes note of the placements of Input.Cleared's pods, the
// first of placed, on ready nodes (not upcoming ones): the nodes where
// they differ from the last filter's are not as they were.
func (r *filterReuse) clearedOn(placed []simulator.Placed, upcoming map[string]string) {
	for _, p := range placed {
		if _, ok := upcoming[p.Node]; !ok {
			r.next.cleared = append(r.next.cleared, p)
		}
	}
	r.add(r.next.cleared, 1)
	r.add(r.prev.cleared, ^uint64(0))
}

// settled is the next Reuse once the decision restored the snapshot:
// its nodes hold what they held before, under new generations, which the
// memo of their pods' hashes takes on. The upcoming nodes' copies are
// gone.
func (r *filterReuse) settled(snap *simulator.Snapshot) Reuse {
	r.next.pods.Settle(snap)
	return r.next
}

// uniqueHostnames tells whether no two nodes share a hostname label.
func uniqueHostnames(nodes []fwk.NodeInfo) bool {
	seen := make(map[string]bool, len(nodes))
	for _, ni := range nodes {
		h, ok := ni.Node().Labels[corev1.LabelHostname]
		if !ok {
			continue
		}
		if seen[h] {
			return false
		}
		seen[h] = true
	}
	return true
}

// match finds the last filter's run of g, when its placements may be
// reused, and brings diff to the point before it. Runs are matched in
// their order: a group that moved ahead of others is searched afresh.
func (r *filterReuse) match(g *simulator.PodGroup) *groupRun {
	j, ok := r.byKey[g.Key]
	if !ok || j < r.accounted {
		return nil
	}
	for ; r.accounted < j; r.accounted++ {
		r.add(r.prev.groups[r.accounted].placed, ^uint64(0))
	}
	return &r.prev.groups[j]
}

// done takes run's placements out of diff, once g's are known (record
// adds them): where they are the same, diff stays as it was.
func (r *filterReuse) done(run *groupRun) {
	if run != nil {
		r.add(run.placed, ^uint64(0))
		r.accounted++
	}
}

// add adds placements to diff, times sign (1 or -1).
func (r *filterReuse) add(placed []simulator.Placed, sign uint64) {
	for _, p := range placed {
		v := r.diff[p.Node] + sign*simulator.UIDHash(p.Info.GetPod().UID)
		if v == 0 {
			delete(r.diff, p.Node)
		} else {
			r.diff[p.Node] = v
		}
	}
}

// record notes how g was placed.
func (r *filterReuse) record(g *simulator.PodGroup, local bool, placed []simulator.Placed) {
	r.add(placed, 1)
	uids := make([]types.UID, len(g.Pods))
	for i, p := range g.Pods {
		uids[i] = p.UID
	}
	r.next.groups = append(r.next.groups, groupRun{key: g.Key, pods: uids, local: local, placed: placed})
}

// samePods tells whether g has run's pods, in order.
func (run *groupRun) samePods(g *simulator.PodGroup) bool {
	if len(run.pods) != len(g.Pods) {
		return false
	}
	for i, p := range g.Pods {
		if p.UID != run.pods[i] {
			return false
		}
	}
	return true
}

// again is run's first k placements for g's pods (the same pods, perhaps
// newer objects).
func again(run *groupRun, g *simulator.PodGroup, k int) []simulator.Placed {
	out := make([]simulator.Placed, k)
	for i, p := range run.placed[:k] {
		info := p.Info
		if pod := g.Pods[i]; pod != info.GetPod() {
			copied := *info.(*framework.PodInfo)
			copied.Pod = pod
			info = &copied
		}
		out[i] = simulator.Placed{Info: info, Node: p.Node}
	}
	return out
}

// dirty lists the nodes whose answer for a reused group may differ: those
// changed and those where the groups before it placed other pods.
func (r *filterReuse) dirty() []string {
	out := make([]string, 0, len(r.changed)+len(r.diff))
	for name := range r.changed {
		out = append(out, name)
	}
	for name := range r.diff {
		if !r.changed[name] {
			out = append(out, name)
		}
	}
	return out
}

// standing returns how many of run's first placements are what searching
// for g now finds, and whether all of them are and the search would find
// nothing more (whole), given that refuses tells whether a node refuses
// g's pod now, before any of g's pods are placed. The placements that
// stand are those of the pods g starts with, in the same order, on nodes
// as they were, each ahead of every changed node that takes g's pod now:
// every node before them is as it was, so refuses as it did, or changed
// and refuses. Beyond the last placement, the search looks at the other
// nodes only for pods the placements leave.
//
// from names the node the search for the others may start at: the node of
// the last placement that stands; with none, the first changed node that
// takes g's pod or the node of run's first placement, if as it was,
// whichever comes first (every node before it refuses g's pod). Empty, the
// search starts at the first node.
func (r *filterReuse) standing(run *groupRun, g *simulator.PodGroup, refuses func(name string) (bool, error)) (k int, whole bool, from string, err error) {
	if !run.local {
		return 0, false, "", nil
	}
	list := r.next.nodes
	same := run.samePods(g)
	cut, limit := len(list.names), len(list.names)-1
	if n := len(run.placed); same && n == len(g.Pods) {
		limit = list.at[run.placed[n-1].Node]
	}
	for _, name := range r.dirty() {
		i, ok := list.at[name]
		if !ok || i > limit || i >= cut {
			continue
		}
		no, err := refuses(name)
		if err != nil {
			return 0, false, "", err
		}
		if !no {
			cut = i
		}
	}
	for k < len(run.placed) && k < len(g.Pods) && g.Pods[k].UID == run.pods[k] {
		node := run.placed[k].Node
		if !r.clean(node) || list.at[node] >= cut {
			break
		}
		k++
	}
	whole = same && k == len(run.placed) && cut > limit
	switch {
	case k > 0:
		from = run.placed[k-1].Node
	case len(run.placed) > 0 && r.clean(run.placed[0].Node) && list.at[run.placed[0].Node] < cut:
		from = run.placed[0].Node
	case cut < len(list.names) && (len(run.placed) == 0 || r.clean(run.placed[0].Node)):
		from = list.names[cut]
	}
	return k, whole, from, nil
}

// clean tells whether the node is in the list, as it was.
func (r *filterReuse) clean(node string) bool {
	_, ok := r.next.nodes.at[node]
	return ok && !r.changed[node] && r.diff[node] == 0
}

// resume places g's pods after the first len(reused), which reused
// places: the search starts at node from (see standing). check, when
// set, is g's check before them.
func (d *decision) resume(ctx context.Context, g *simulator.PodGroup, nodes *simulator.NodeIndex, reused []simulator.Placed, check *simulator.GroupCheck, from string) ([]simulator.Placed, []*corev1.Pod, *simulator.GroupCheck, error) {
	c, r := d.in.Checker, d.reuse
	r.resumed++
	r.unbound = append(r.unbound, reused...)
	if err := r.bind(nodes, c.Snapshot()); err != nil {
		return nil, nil, nil, err
	}
	var err error
	if check != nil {
		check, err = c.CatchUp(ctx, check, reused)
	} else {
		check, err = c.CheckGroup(ctx, g)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	rest, unplaced, err := c.PlaceGroupIndexedFrom(ctx, check, g.Pods[len(reused):], nodes, from)
	if err != nil {
		return nil, nil, nil, err
	}
	placed := append(reused, rest...)
	r.record(g, check.Status == nil, placed)
	return placed, unplaced, check, nil
}

// placeGroup places g's pods on the ready nodes, reusing the last
// filter's placements when they hold; check is nil then.
func (d *decision) placeGroup(ctx context.Context, g *simulator.PodGroup, nodes *simulator.NodeIndex) (placed []simulator.Placed, unplaced []*corev1.Pod, check *simulator.GroupCheck, err error) {
	c, r := d.in.Checker, d.reuse
	run := r.match(g)
	defer r.done(run)
	if run != nil && r.isLocal(c.Snapshot(), g.Representative()) {
		k, whole, from, err := r.standing(run, g, func(name string) (bool, error) {
			if check == nil {
				if err := r.bind(nodes, c.Snapshot()); err != nil {
					return false, err
				}
				if check, err = c.CheckGroup(ctx, g); err != nil {
					return false, err
				}
			}
			ni := c.Snapshot().NodeInfo(name)
			return !(check.ResourcesFit(ni) && c.Filter(ctx, check.PodCheck, ni).IsSuccess()), nil
		})
		if err != nil {
			return nil, nil, nil, err
		}
		if whole {
			placed = again(run, g, k)
			r.reused++
			r.unbound = append(r.unbound, placed...)
			r.record(g, true, placed)
			return placed, g.Pods[k:], nil, nil
		}
		if from != "" {
			return d.resume(ctx, g, nodes, again(run, g, k), check, from)
		}
	}
	if err := r.bind(nodes, c.Snapshot()); err != nil {
		return nil, nil, nil, err
	}
	free := r.isLocal(c.Snapshot(), g.Representative())
	if check == nil {
		// (A check made to find the nodes that changed is this one.)
		if check, err = c.CheckGroup(ctx, g); err != nil {
			return nil, nil, nil, err
		}
	}
	if placed, unplaced, err = c.PlaceGroupIndexed(ctx, check, g.Pods, nodes); err != nil {
		return nil, nil, nil, err
	}
	r.record(g, free && check.Status == nil, placed)
	return placed, unplaced, check, nil
}

// bind binds the reused placements in the snapshot and tells the index.
func (r *filterReuse) bind(nodes *simulator.NodeIndex, snap *simulator.Snapshot) error {
	for _, p := range r.unbound {
		if err := snap.AddPod(p.Info, p.Node); err != nil {
			return err
		}
		nodes.Update(p.Node)
	}
	r.unbound = r.unbound[:0]
	return nil
}

// isLocal tells whether a node takes pod depends on that node
// alone: pod is local, its own anti-affinity is per node, and so is that
// of the pods in the snapshot.
func (r *filterReuse) isLocal(snap *simulator.Snapshot, pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	ownAnti := a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
	return local(pod) && (r.uniqueHosts || !ownAnti) && r.othersLocal(snap, pod)
}

// othersLocal tells that every required anti-affinity term of the pods in
// the snapshot that selects pod keeps it off the term's own node only
// (topology by hostname, hostnames unique), so that whether a node takes
// pod depends on that node's pods alone. A term with a namespace selector
// is taken to select it (the namespaces' labels are not read here).
func (r *filterReuse) othersLocal(snap *simulator.Snapshot, pod *corev1.Pod) bool {
	nodes, err := snap.NodeInfos().HavePodsWithRequiredAntiAffinityList()
	if err != nil {
		return false
	}
	for _, ni := range nodes {
		for _, pi := range ni.GetPodsWithRequiredAntiAffinity() {
			spec := pi.GetPod().Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
			terms := pi.GetRequiredAntiAffinityTerms()
			if len(terms) != len(spec) {
				return false
			}
			for i, t := range terms {
				selects := (spec[i].NamespaceSelector != nil || t.Namespaces.Has(pod.Namespace)) && t.Selector.Matches(labels.Set(pod.Labels))
				if selects && (t.TopologyKey != corev1.LabelHostname || !r.uniqueHosts) {
					return false
				}
			}
		}
	}
	return true
}

// local tells whether a node takes pod depends on that node alone
// (its labels, taints and allocatable, and its pods: their requests,
// count, host ports, labels and anti-affinity), and placing it makes nodes
// only less suitable: no pod affinity, required anti-affinity only per
// hostname and within namespaces it names, no topology spread, no volume
// but those a node does not count (projected, config map, secret, empty
// dir, downward API), no resource claims.
func local(pod *corev1.Pod) bool {
	if a := pod.Spec.Affinity; a != nil {
		if a.PodAffinity != nil {
			return false
		}
		if anti := a.PodAntiAffinity; anti != nil {
			for _, t := range anti.RequiredDuringSchedulingIgnoredDuringExecution {
				if t.TopologyKey != corev1.LabelHostname || t.NamespaceSelector != nil {
					return false
				}
			}
		}
	}
	if len(pod.Spec.TopologySpreadConstraints) > 0 || len(pod.Spec.ResourceClaims) > 0 {
		return false
	}
	for _, v := range pod.Spec.Volumes {
		s := v.VolumeSource
		if s.Projected == nil && s.ConfigMap == nil && s.Secret == nil && s.EmptyDir == nil && s.DownwardAPI == nil {
			return false
		}
	}
	return true
}
