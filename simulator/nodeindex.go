package simulator

import (
	"context"
	"maps"
	"math"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// blockSize is how many consecutive nodes of a kind's list share one
// record of the most room left.
const blockSize = 32

// NodeIndex is a node list indexed for placing pod groups on it, so that a
// group looks only at the nodes it can fit on rather than at every node:
//
//   - by kind of pod (PlacementKey): only the nodes whose taints and labels
//     admit the group's pods (Admitting), listed once per kind;
//   - by room: within a kind's list, a run of blockSize nodes is passed
//     over at once when even the roomiest of them lacks cpu, memory or a
//     pod slot for the group's pod.
//
// The nodes passed over are those the pre-check and Filter plugins refuse
// anyway, and the others keep their order, so a search finds the very node
// FindNode finds on the whole list. Every change to a node's pods while the
// index is in use must be told with Update (PlaceGroupIndexed does).
type NodeIndex struct {
	nodes []fwk.NodeInfo
	// objs are the nodes' objects as they were indexed.
	objs  []*corev1.Node
	at    map[string]int
	kinds map[string]*kindNodes
	// admitted are the kinds' node lists, which depend on the node
	// objects alone: an index of the same nodes shares them.
	admitted map[string]*admitted
	key      []byte
}

// admitted are the nodes admitting one kind of pod.
type admitted struct {
	nodes []fwk.NodeInfo
	// slot is, for each node of the index, its place in nodes, or -1.
	slot []int32
}

// kindNodes are the nodes admitting one kind of pod, with the most room
// left in each block of them.
type kindNodes struct {
	*admitted
	room []room
}

// room is what a node has left (or, for a block, the most any of its
// nodes has left) of cpu (millicores), memory (bytes) and pod slots.
type room struct{ cpu, mem, pods int64 }

// NewNodeIndex indexes nodes, in their order. Kinds are listed as groups
// ask for them.
func NewNodeIndex(nodes []fwk.NodeInfo) *NodeIndex {
	return NewNodeIndexFrom(nodes, nil)
}

// NewNodeIndexFrom is NewNodeIndex, taking from prev, when set, the kinds'
// lists of nodes it made (not their room, which is measured afresh) if
// its nodes are the same, in the same order, with the same objects.
func NewNodeIndexFrom(nodes []fwk.NodeInfo, prev *NodeIndex) *NodeIndex {
	ix := &NodeIndex{nodes: nodes, kinds: map[string]*kindNodes{}}
	same := prev != nil && len(prev.nodes) == len(nodes)
	for i := 0; same && i < len(nodes); i++ {
		same = nodes[i] == prev.nodes[i] && nodes[i].Node() == prev.objs[i]
	}
	if same {
		ix.objs, ix.at, ix.admitted = prev.objs, prev.at, maps.Clone(prev.admitted)
		return ix
	}
	ix.objs, ix.at, ix.admitted = make([]*corev1.Node, len(nodes)), make(map[string]int, len(nodes)), map[string]*admitted{}
	for i, ni := range nodes {
		ix.objs[i] = ni.Node()
		ix.at[ix.objs[i].Name] = i
	}
	return ix
}

// kind returns the nodes admitting pod's kind, listing them the first time.
func (ix *NodeIndex) kind(pod *corev1.Pod) *kindNodes {
	ix.key = PlacementKey(ix.key[:0], pod)
	if k, ok := ix.kinds[string(ix.key)]; ok {
		return k
	}
	a, ok := ix.admitted[string(ix.key)]
	if !ok {
		a = &admitted{nodes: Admitting(pod, ix.nodes), slot: make([]int32, len(ix.nodes))}
		for i := range a.slot {
			a.slot[i] = -1
		}
		for i, ni := range a.nodes {
			a.slot[ix.at[ni.Node().Name]] = int32(i)
		}
		ix.admitted[string(ix.key)] = a
	}
	k := &kindNodes{admitted: a, room: make([]room, (len(a.nodes)+blockSize-1)/blockSize)}
	for b := range k.room {
		k.measure(b)
	}
	ix.kinds[string(ix.key)] = k
	return k
}

// Update brings the index up to date after the pods of the named node
// changed.
func (ix *NodeIndex) Update(name string) {
	i, ok := ix.at[name]
	if !ok {
		return
	}
	for _, k := range ix.kinds {
		if s := k.slot[i]; s >= 0 {
			k.measure(int(s) / blockSize)
		}
	}
}

// measure records the most room left in block b.
func (k *kindNodes) measure(b int) {
	var most room
	for _, ni := range k.nodes[b*blockSize : min((b+1)*blockSize, len(k.nodes))] {
		r := roomOf(ni)
		most = room{max(most.cpu, r.cpu), max(most.mem, r.mem), max(most.pods, r.pods)}
	}
	k.room[b] = most
}

// roomOf is what the node has left; unbounded for a NodeInfo the
// pre-check does not read.
func roomOf(ni fwk.NodeInfo) room {
	n, ok := ni.(*framework.NodeInfo)
	if !ok {
		return room{math.MaxInt64, math.MaxInt64, math.MaxInt64}
	}
	have, used := n.Allocatable, n.Requested
	return room{have.MilliCPU - used.MilliCPU, have.Memory - used.Memory, int64(have.AllowedPodNumber - len(n.Pods))}
}

// admits is false when the pre-check (ResourcesFit) surely refuses the
// pod on every node of a block with room r.
func (r room) admits(req *framework.Resource) bool {
	return r.pods >= 1 && !(req.MilliCPU > 0 && r.cpu < req.MilliCPU) && !(req.Memory > 0 && r.mem < req.Memory)
}

// PlaceGroupIndexed is PlaceGroup on the index's nodes, with the same
// placements: each pod goes to the node PlaceGroup would choose on the
// whole list.
func (c *Checker) PlaceGroupIndexed(ctx context.Context, gc *GroupCheck, pods []*corev1.Pod, ix *NodeIndex) (placed []Placed, unplaced []*corev1.Pod, err error) {
	return c.PlaceGroupIndexedFrom(ctx, gc, pods, ix, "")
}

// PlaceGroupIndexedFrom is PlaceGroupIndexed with the search starting at
// the named node, for the later pods of a monotone group whose earlier
// pods were placed up to that node: the nodes before it, which refused
// them, refuse these too. An empty name, a node the group's pods are not
// admitted to or a group that is not monotone start at the first node.
func (c *Checker) PlaceGroupIndexedFrom(ctx context.Context, gc *GroupCheck, pods []*corev1.Pod, ix *NodeIndex, from string) (placed []Placed, unplaced []*corev1.Pod, err error) {
	if gc.Status != nil {
		return nil, pods, nil
	}
	k := ix.kind(gc.Pod)
	start := 0
	if i, ok := ix.at[from]; ok && gc.monotone && k.slot[i] >= 0 {
		start = int(k.slot[i])
	}
	find := func(cur *Cursor) fwk.NodeInfo {
		if idx := c.find(ctx, gc, k.nodes, k.room, cur); idx >= 0 {
			return k.nodes[idx]
		}
		return nil
	}
	return c.placeGroup(ctx, gc, pods, len(k.nodes), start, find, ix.Update)
}
