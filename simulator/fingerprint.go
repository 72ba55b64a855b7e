package simulator

import (
	"encoding/binary"
	"hash/fnv"
	"maps"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
)

// NodeHash hashes what the Filter plugins read of a node object for a
// plain pod: its name, labels, taints, unschedulable flag, allocatable and
// declared features. Heartbeats, conditions, versions and managed fields
// are left out: they change no placement.
func NodeHash(n *corev1.Node) uint64 {
	h := fnv.New64a()
	var b []byte
	str := func(s string) { b = binary.AppendUvarint(b, uint64(len(s))); b = append(b, s...) }
	str(n.Name)
	for _, k := range slices.Sorted(maps.Keys(n.Labels)) {
		str(k)
		str(n.Labels[k])
	}
	b = append(b, '|')
	for _, t := range n.Spec.Taints {
		str(t.Key)
		str(t.Value)
		str(string(t.Effect))
	}
	if n.Spec.Unschedulable {
		b = append(b, 'U')
	}
	b = append(b, '|')
	for _, k := range slices.Sorted(maps.Keys(n.Status.Allocatable)) {
		q := n.Status.Allocatable[k]
		str(string(k))
		str(q.String())
	}
	b = append(b, '|')
	for _, f := range n.Status.DeclaredFeatures {
		str(f)
	}
	h.Write(b)
	return h.Sum64()
}

// NodeInfoHash is the fingerprint of a node in the snapshot, from its
// object's hash: with it, what its pods take (requests, count, host ports).
func NodeInfoHash(node uint64, ni fwk.NodeInfo) uint64 {
	h := fnv.New64a()
	b := binary.LittleEndian.AppendUint64(nil, node)
	req := ni.GetRequested()
	for _, v := range []int64{req.GetMilliCPU(), req.GetMemory(), req.GetEphemeralStorage(), int64(req.GetAllowedPodNumber()), int64(len(ni.GetPods()))} {
		b = binary.AppendVarint(b, v)
	}
	scalar := req.GetScalarResources()
	for _, k := range slices.Sorted(maps.Keys(scalar)) {
		b = append(b, k...)
		b = binary.AppendVarint(b, scalar[k])
	}
	b = append(b, '|')
	ports := ni.GetUsedPorts()
	for _, ip := range slices.Sorted(maps.Keys(ports)) {
		b = append(b, ip...)
		pp := slices.Collect(maps.Keys(ports[ip]))
		sort.Slice(pp, func(i, j int) bool {
			if pp[i].Protocol != pp[j].Protocol {
				return pp[i].Protocol < pp[j].Protocol
			}
			return pp[i].Port < pp[j].Port
		})
		for _, p := range pp {
			b = append(b, p.Protocol...)
			b = binary.AppendVarint(b, int64(p.Port))
		}
	}
	h.Write(b)
	return h.Sum64()
}

// PodsHash hashes what the pods of a node are to a local pod beyond what
// they take: which pods (UIDs) with which labels (what anti-affinity
// selects; a pod's own affinity cannot change). It depends on neither the
// order of the pods nor that of their labels.
func PodsHash(ni fwk.NodeInfo) uint64 {
	var sum uint64
	var b []byte
	for _, pi := range ni.GetPods() {
		pod := pi.GetPod()
		var labels uint64
		for k, v := range pod.Labels {
			b = append(append(append(b[:0], k...), 0), v...)
			labels += scramble(fnv64(b))
		}
		sum += scramble(fnv64([]byte(pod.UID)) ^ scramble(labels))
	}
	return sum
}

// scramble is SplitMix64's finalizer: sums of mixed values do not cancel as
// sums of plain ones would.
func scramble(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// fnv64 is FNV-1a over b, without allocating.
func fnv64(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// UIDHash is a pod's share of a node's placement sum.
func UIDHash(uid types.UID) uint64 {
	return fnv64([]byte(uid)) | 1
}

// NodePrint is the fingerprint of a node in the snapshot: NodeInfoHash of
// its object's hash (NodeHash) and its pods' (PodsHash).
func NodePrint(ni fwk.NodeInfo) uint64 {
	return NodeInfoHash(NodeHash(ni.Node())^PodsHash(ni), ni)
}

// PrintMemo memoizes NodePrint by NodeInfo while its generation, which
// every change of the node or its pods renews, and its Node object (which
// informers replace on every change) stay the same. A decision builds the
// next one as it reads the nodes, from the last one. Memos share their
// entries: an entry states what the node's print is at its generation,
// which stays true whichever memo holds it (Settle renews the generation
// only of nodes that hold what they held).
type PrintMemo map[fwk.NodeInfo]*printMemo

type printMemo struct {
	generation int64
	node       *corev1.Node
	// nodeHash is NodeHash(node); print NodePrint.
	nodeHash, print uint64
}

// Print is NodePrint(ni), from prev while ni has the generation and the
// Node object it had there (the node's hash alone while the object is the
// same); m remembers it.
func (m PrintMemo) Print(prev PrintMemo, ni fwk.NodeInfo) uint64 {
	node := ni.Node()
	e := prev[ni]
	if e == nil || e.node != node || e.generation != ni.GetGeneration() {
		var h uint64
		if e != nil && e.node == node {
			h = e.nodeHash
		} else {
			h = NodeHash(node)
		}
		e = &printMemo{generation: ni.GetGeneration(), node: node, nodeHash: h, print: NodeInfoHash(h^PodsHash(ni), ni)}
	}
	m[ni] = e
	return e.print
}

// Settle takes on the generations of the nodes a decision changed and then
// restored (they hold what they held before), and forgets the nodes no
// longer in snap.
func (m PrintMemo) Settle(snap *Snapshot) {
	for ni, e := range m {
		if snap.NodeInfo(ni.Node().Name) != ni {
			delete(m, ni)
			continue
		}
		e.generation = ni.GetGeneration()
	}
}
