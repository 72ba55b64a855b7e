package scaledown

import (
	"context"
	"encoding/binary"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tidal-autoscaler/tidal/simulator"
)

// Reuse is what one plan hands the next, so that the next simulates again
// only the removals a change may have touched. It is a value: DecideFrom
// takes the last one and returns the next, and the zero Reuse reuses
// nothing.
//
// A plan considers the candidates one after another, and where a removal's
// pods go depends on every earlier removal's: they stay where they moved.
// The last plan's removals are matched to this plan's candidates by name,
// in order (a candidate that moved ahead of others is simulated afresh),
// and the changes the removals made so far are summed per node against
// the changes the last plan's removals up to the match had made: a node
// where they differ is not as the last plan's removal found it. A removal
// is taken again, without searching, when
//
//   - its pods to move are the same as the Filter plugins see them (UID,
//     labels, requests, tolerations, node selector and node affinity), as
//     are the pods earlier removals moved onto its node;
//   - no node its simulation read is otherwise than the last plan's
//     removal found it: its own and every node a search for a destination
//     looked at, whether it refused the pod or took it. A node changed when
//     its object as the Filter plugins read it (not its heartbeats,
//     versions or managed fields) or its pods (which, their labels, what
//     they take) are not as they were, or the arriving pods pictured on it
//     or the room taken there for the drains under way are not, or the
//     removals so far changed it otherwise;
//   - the searches start where they did: the nodes a kind of pod may go to
//     are the same, in the same order, and so is where the kind's last pod
//     fitted;
//   - nothing read across nodes changed: none of its pods was judged
//     against the whole cluster (pod affinity, topology spread, or any pod
//     with required anti-affinity there) unless no node changed at all; the
//     pods with required anti-affinity are the same, on the same nodes; the
//     objects in the checker's listers are the same.
//
// Any other removal is simulated afresh, and the changes it makes are
// summed as above, so a removal after it is taken again only when it
// read no node the difference reached.
//
// Everything else (eligibility, utilization and the order, the pods'
// classification, PDB budgets, group sizes, the room for the drains) is
// computed afresh every time. A removal taken again is placed as it was:
// its node leaves the snapshot and its pods go where they went.
type Reuse struct {
	checker *simulator.Checker
	listers uint64
	// anti sums the pods with required anti-affinity and their nodes.
	anti uint64
	keys *simulator.EquivalenceKeys
	// ids numbers the nodes seen, so that a removal names the nodes it
	// read compactly.
	ids map[string]int32
	// prints are the nodes' fingerprints, as the plan found them.
	prints map[string]uint64
	// memo memoizes the nodes' fingerprints by NodeInfo while its
	// generation and Node object stay the same.
	memo simulator.PrintMemo
	// early sums, per node, the arriving pods pictured there, the pods of
	// drains under way given room there, and whether it is being deleted.
	early map[string]uint64
	steps []step
}

// step is how the plan considered one candidate.
type step struct {
	name string
	// simulated tells that its removal was simulated; the rest only then.
	simulated bool
	// self hashes its pods to move (see selfHash); uids are the pods the
	// simulation moved or tried to, in order, and dests where they went
	// ("" for the one that fitted nowhere, the last).
	self  uint64
	uids  []types.UID
	dests []string
	// kinds are the kinds of pods its searches looked for, as they were
	// when they started and ended.
	kinds []kindUse
	// global: a search read the whole cluster.
	global bool
	reads  nodeSet
}

// kindUse is a kind of pod a removal's searches used: its nodes (their
// hash) and where its last pod fitted before and after.
type kindUse struct {
	key        string
	list       uint64
	start, end int
}

// nodeSet is a set of node ids: sorted, or a bitmap when large.
type nodeSet struct {
	ids  []int32
	bits []uint64
}

func (s nodeSet) has(id int32) bool {
	if s.bits != nil {
		w := int(id) / 64
		return w < len(s.bits) && s.bits[w]&(1<<(uint(id)%64)) != 0
	}
	_, ok := slices.BinarySearch(s.ids, id)
	return ok
}

// bitsFrom is the most node ids kept as a sorted list.
const bitsFrom = 64

func newNodeSet(ids []int32, n int) nodeSet {
	if len(ids) <= bitsFrom {
		s := slices.Clone(ids)
		slices.Sort(s)
		return nodeSet{ids: s}
	}
	bits := make([]uint64, (n+63)/64)
	for _, id := range ids {
		bits[id/64] |= 1 << (uint(id) % 64)
	}
	return nodeSet{bits: bits}
}

// DecideFrom is Decide, taking again from prev the removals no change
// touched (see Reuse). The plan is the one Decide makes; the Reuse returned
// is for the next plan.
func DecideFrom(ctx context.Context, in Input, prev Reuse) (*Plan, Reuse, error) {
	r := newReuseRun(in.Checker, prev)
	plan, err := decide(ctx, in, r.next.keys, r)
	if err != nil {
		return nil, Reuse{keys: r.next.keys}, err
	}
	r.next.memo.Settle(in.Checker.Snapshot())
	plan.ReusedRemovals = r.reused
	return plan, r.next, nil
}

// reuseRun is one plan's use of the last Reuse, building the next.
type reuseRun struct {
	prev, next Reuse
	// dirty are the nodes that changed before the candidates (ids).
	dirty   []int32
	isDirty map[int32]bool
	// usable: the last plan's steps may be taken again; prevAt finds a
	// candidate's there.
	usable bool
	prevAt map[string]int
	// diff sums, per node (id), the changes the removals so far made there,
	// less those the last plan's removals before cursor made: nonzero
	// where they differ.
	diff   map[int32]uint64
	cursor int
	// rec is the removal being recorded, stamp and read the nodes it read
	// so far; at counts the removals considered.
	rec    *step
	stamp  []int32
	read   []int32
	at     int
	reused int
}

// newReuseRun fingerprints the snapshot's nodes before the plan changes
// anything.
func newReuseRun(c *simulator.Checker, prev Reuse) *reuseRun {
	snap := c.Snapshot()
	if prev.keys == nil {
		prev.keys = simulator.NewEquivalenceKeys()
	}
	if prev.ids == nil || len(prev.ids) > 2*snap.Len()+1024 {
		// Ids of nodes long gone pile up: number afresh, reuse nothing.
		prev = Reuse{keys: prev.keys, memo: prev.memo, ids: map[string]int32{}}
	}
	if prev.checker != c || prev.listers != c.ListerVersion() {
		prev.steps = nil
	}
	r := &reuseRun{prev: prev, isDirty: map[int32]bool{}, diff: map[int32]uint64{}}
	r.next = Reuse{checker: c, listers: c.ListerVersion(), keys: prev.keys, ids: prev.ids,
		prints: make(map[string]uint64, snap.Len()), memo: make(simulator.PrintMemo, snap.Len()), early: map[string]uint64{}}
	for _, ni := range snap.Infos() {
		info := ni.(*framework.NodeInfo)
		name := info.Node().Name
		fp := r.fingerprint(info)
		r.next.prints[name] = fp
		if old, ok := prev.prints[name]; !ok || old != fp {
			r.markDirty(name)
		}
	}
	for name := range prev.prints {
		if _, ok := r.next.prints[name]; !ok {
			r.markDirty(name)
		}
	}
	return r
}

// fingerprint hashes what the Filter plugins read of a node and its pods.
func (r *reuseRun) fingerprint(ni *framework.NodeInfo) uint64 {
	return r.next.memo.Print(r.prev.memo, ni)
}

// id is the node's number, given it if new.
func (r *reuseRun) id(name string) int32 {
	id, ok := r.next.ids[name]
	if !ok {
		id = int32(len(r.next.ids))
		r.next.ids[name] = id
	}
	return id
}

func (r *reuseRun) markDirty(name string) {
	id := r.id(name)
	if !r.isDirty[id] {
		r.isDirty[id] = true
		r.dirty = append(r.dirty, id)
	}
}

// wroteEarly notes a change the plan made to a node before the candidates:
// an arriving pod pictured, room reserved for a drain's pod (pod), or the
// node taken out as being deleted (pod nil).
func (r *reuseRun) wroteEarly(node string, pod *framework.PodInfo) {
	h := fnvAdd(fnvOffset, node)
	if pod != nil {
		res := pod.CalculateResource().Resource
		h = fnvAdd(fnvAdd(fnvAdd(h, string(pod.Pod.UID)), strconv.FormatInt(res.GetMilliCPU(), 10)), strconv.FormatInt(res.GetMemory(), 10))
	}
	r.next.early[node] += h
}

// begin readies the run once the plan made its changes before the
// candidates (snap as they left it): the nodes those changed where they
// differ from the last plan's are dirty too.
func (r *reuseRun) begin(snap *simulator.Snapshot) {
	for name, v := range r.next.early {
		if r.prev.early[name] != v {
			r.markDirty(name)
		}
	}
	for name, v := range r.prev.early {
		if r.next.early[name] != v {
			r.markDirty(name)
		}
	}
	r.next.anti = antiHash(snap)
	r.usable = r.prev.steps != nil && r.prev.anti == r.next.anti
	r.prevAt = make(map[string]int, len(r.prev.steps))
	for i, s := range r.prev.steps {
		r.prevAt[s.name] = i
	}
	r.stamp = make([]int32, len(r.next.ids))
}

// antiHash sums the pods with required anti-affinity and their nodes.
func antiHash(snap *simulator.Snapshot) uint64 {
	nodes, err := snap.NodeInfos().HavePodsWithRequiredAntiAffinityList()
	if err != nil {
		return 1
	}
	var sum uint64
	for _, ni := range nodes {
		for _, pi := range ni.GetPodsWithRequiredAntiAffinity() {
			sum += fnvAdd(fnvAdd(fnvOffset, string(pi.GetPod().UID)), ni.Node().Name)
		}
	}
	return sum
}

// skipped ends the step of a candidate whose removal was not simulated.
func (r *reuseRun) skipped(e *evaluated) {
	r.next.steps = append(r.next.steps, step{name: e.Name})
	r.at++
}

// script is the last plan's step for the candidate, when its removal may
// be taken again (see Reuse), moving the pods of moving; nil otherwise,
// which starts recording the removal.
func (r *reuseRun) script(p *planner, e *evaluated, moving []*framework.PodInfo) *step {
	self := selfHash(e.Name, moving)
	var prev *step
	if j, ok := r.prevAt[e.Name]; ok && r.usable && j >= r.cursor {
		for ; r.cursor < j; r.cursor++ {
			r.wrote(&r.prev.steps[r.cursor], ^uint64(0))
		}
		r.cursor++
		prev = &r.prev.steps[j]
		if r.holds(p, prev, self, moving) {
			r.reused++
			return prev
		}
		r.wrote(prev, ^uint64(0))
	}
	uids := make([]types.UID, len(moving))
	for i, info := range moving {
		uids[i] = info.Pod.UID
	}
	r.rec = &step{name: e.Name, simulated: true, self: self, uids: uids}
	r.read = r.read[:0]
	r.noteRead(r.next.ids[e.Name])
	return nil
}

// wrote adds the changes a removal made (its node gone, its pods on
// their new nodes; none when some pod fitted nowhere) to diff, times sign
// (1 or -1).
func (r *reuseRun) wrote(s *step, sign uint64) {
	if !s.simulated || len(s.dests) != len(s.uids) || slices.Contains(s.dests, "") {
		return
	}
	r.add(s.name, sign*fnvAdd(fnvOffset, "removed"))
	for i, dest := range s.dests {
		r.add(dest, sign*simulator.UIDHash(s.uids[i]))
	}
}

func (r *reuseRun) add(node string, v uint64) {
	id := r.next.ids[node]
	if r.diff[id] += v; r.diff[id] == 0 {
		delete(r.diff, id)
	}
}

// holds tells whether the last plan's step s still holds: the nodes it
// read are as they were when it was made, and so is what else it read.
func (r *reuseRun) holds(p *planner, s *step, self uint64, moving []*framework.PodInfo) bool {
	changed := len(r.dirty) > 0 || len(r.diff) > 0
	if !s.simulated || s.self != self || len(s.uids) != len(moving) || s.global && changed {
		return false
	}
	for i, info := range moving {
		if info.Pod.UID != s.uids[i] {
			return false
		}
	}
	for _, id := range r.dirty {
		if s.reads.has(id) {
			return false
		}
	}
	for id := range r.diff {
		if s.reads.has(id) {
			return false
		}
	}
	for _, info := range moving {
		p.kindOf(info.Pod)
	}
	for _, u := range s.kinds {
		k := p.kinds[u.key]
		if k == nil || k.list != u.list || k.hint != u.start {
			return false
		}
	}
	return true
}

// replayed ends the step of a removal taken again: the kinds' searches
// end where they did.
func (r *reuseRun) replayed(p *planner, s *step) {
	for _, u := range s.kinds {
		p.kinds[u.key].hint = u.end
	}
	r.next.steps = append(r.next.steps, *s)
	r.at++
}

// use notes that the removal being recorded searches for kind k.
func (r *reuseRun) use(k *kind) {
	for _, u := range r.rec.kinds {
		if u.key == k.key {
			return
		}
	}
	r.rec.kinds = append(r.rec.kinds, kindUse{key: k.key, list: k.list, start: k.hint})
}

func (r *reuseRun) noteRead(id int32) {
	if r.stamp[id] != int32(r.at+1) {
		r.stamp[id] = int32(r.at + 1)
		r.read = append(r.read, id)
	}
}

// recorded ends the step of a removal simulated afresh.
func (r *reuseRun) recorded(p *planner) {
	s := r.rec
	for i, u := range s.kinds {
		s.kinds[i].end = p.kinds[u.key].hint
	}
	s.reads = newNodeSet(r.read, len(r.next.ids))
	r.wrote(s, 1)
	r.next.steps = append(r.next.steps, *s)
	r.rec = nil
	r.at++
}

// selfHash hashes the pods a removal moves as the Filter plugins see
// them: UID, labels, requests and what simulator.PlacementKey reads.
func selfHash(name string, moving []*framework.PodInfo) uint64 {
	h := fnvAdd(fnvOffset, name)
	var b []byte
	for _, info := range moving {
		pod := info.Pod
		b = append(b[:0], pod.UID...)
		b = simulator.PlacementKey(append(b, '|'), pod)
		// The labels whatever their order.
		var labels uint64
		for k, v := range pod.Labels {
			labels += fnvAdd(fnvAdd(fnvOffset, k), v)
		}
		b = binary.LittleEndian.AppendUint64(append(b, '|'), labels)
		res := info.CalculateResource().Resource
		for _, v := range []int64{res.GetMilliCPU(), res.GetMemory(), res.GetEphemeralStorage()} {
			b = binary.AppendVarint(b, v)
		}
		// Extended resources, whatever the map's order.
		var scalar uint64
		for k, v := range res.GetScalarResources() {
			scalar += fnvAdd(fnvAdd(fnvOffset, string(k)), strconv.FormatInt(v, 10))
		}
		b = binary.LittleEndian.AppendUint64(b, scalar)
		h = fnvAdd(h, b)
	}
	return h
}
