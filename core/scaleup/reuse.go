package scaleup

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

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
	// prints memoizes the ready nodes' fingerprints by NodeInfo while its
	// generation and Node object stay the same.
	prints simulator.PrintMemo
	// index is the ready nodes' index the filter searched: the next one
	// takes its kinds' node lists while the nodes are the same.
	index *simulator.NodeIndex
	// checks are the pod groups' base checks, by group key (see
	// checkGroup).
	checks map[string]*simulator.BaseCheck
	// unkept marks the Reuse handed to a decision whose caller keeps none
	// (Decide): nothing is compared with the nodes' fingerprints then, so
	// the nodes are not fingerprinted.
	unkept bool
}

// nodeList is the ready nodes at the start of a filter, in the order the
// search walks them, with each one's fingerprint.
type nodeList struct {
	names  []string
	at     map[string]int
	prints []uint64
	// objs are the nodes' objects, hosts their hostname labels and
	// unique tells that no two of them share one. With the same objects
	// in the same order, the next filter shares these, names and at.
	objs   []*corev1.Node
	hosts  map[string]bool
	unique bool
}

// listNodes lists the ready nodes, sharing prev's list but for the
// fingerprints when its nodes are the same objects in the same order.
func listNodes(ready []fwk.NodeInfo, prev nodeList) nodeList {
	same := len(prev.objs) == len(ready)
	for i := 0; same && i < len(ready); i++ {
		same = ready[i].Node() == prev.objs[i]
	}
	if same {
		return nodeList{names: prev.names, at: prev.at, prints: make([]uint64, len(ready)), objs: prev.objs, hosts: prev.hosts, unique: prev.unique}
	}
	l := nodeList{names: make([]string, len(ready)), at: make(map[string]int, len(ready)), prints: make([]uint64, len(ready)),
		objs: make([]*corev1.Node, len(ready)), hosts: make(map[string]bool, len(ready)), unique: true}
	for i, ni := range ready {
		node := ni.Node()
		l.names[i], l.at[node.Name], l.objs[i] = node.Name, i, node
		if h, ok := node.Labels[corev1.LabelHostname]; ok {
			l.unique = l.unique && !l.hosts[h]
			l.hosts[h] = true
		}
	}
	return l
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
	// carried counts the group checks started from a base check, and
	// keptChecks the checks of groups reused wholly kept for their pods
	// left (see placeGroup).
	carried, keptChecks int
	// uniqueHosts is true when no two nodes of the snapshot share a
	// hostname label: anti-affinity per hostname is then per node.
	uniqueHosts bool
	// unkept tells that the next Reuse is not kept (see Reuse.unkept).
	unkept bool
}

// newFilterReuse compares the ready nodes with prev's; others are the
// snapshot's other nodes (not ready, upcoming copies) and starting names
// the nodes the decision took nominated pods from (see fingerprint).
func newFilterReuse(c *simulator.Checker, ready, others []fwk.NodeInfo, prev Reuse, starting map[string]bool) *filterReuse {
	unkept := prev.unkept
	if prev.checker != c || prev.listers != c.ListerVersion() {
		prev = Reuse{}
	}
	r := &filterReuse{prev: prev, byKey: make(map[string]int, len(prev.groups)), changed: map[string]bool{}, diff: map[string]uint64{}, unkept: unkept}
	r.next = Reuse{checker: c, listers: c.ListerVersion(), prints: make(simulator.PrintMemo, len(ready)),
		checks: map[string]*simulator.BaseCheck{}}
	r.next.nodes = listNodes(ready, prev.nodes)
	r.uniqueHosts = uniqueHostnames(r.next.nodes, others)
	for i, g := range prev.groups {
		r.byKey[g.key] = i
	}
	oldAt := make([]int, 0, len(ready))
	for i, ni := range ready {
		name := r.next.nodes.names[i]
		if unkept {
			// The last decision's nodes are none, and no next one
			// compares with these: every node is new.
			r.changed[name] = true
			continue
		}
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

// fingerprint hashes what decides whether a local pod fits the node,
// memoized unless the decision moved some of its pods already (moved): the
// memo holds for the node as the decision's end restores it.
func (r *filterReuse) fingerprint(ni fwk.NodeInfo, moved bool) uint64 {
	if moved {
		return simulator.NodePrint(ni)
	}
	return r.next.prints.Print(r.prev.prints, ni)
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
// memo of their fingerprints takes on. The upcoming nodes' copies are
// gone.
func (r *filterReuse) settled(snap *simulator.Snapshot) Reuse {
	if r.unkept {
		return Reuse{}
	}
	r.next.prints.Settle(snap)
	return r.next
}
