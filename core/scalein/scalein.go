// Package scalein chooses which replicas a ReplicaSet removes when the pod
// loop scales a workload in. It sets the pod-deletion-cost annotation so
// that the replicas that go are those on the nodes scale-down would most
// like to empty: the node then holds nothing to evict when it goes.
//
// Everything here is pure: the node loop's view of the nodes and the
// replicas as listed come in, the annotation values to write go out.
package scalein

import (
	"cmp"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Annotations tidal reads and writes on replicas.
const (
	// CostAnnotation is the ReplicaSet controller's pod-deletion-cost:
	// among pods alike in phase and readiness, lower costs go first.
	CostAnnotation = corev1.PodDeletionCost
	// OwnedAnnotation marks a cost tidal set. A cost without it is the
	// user's, and tidal never changes it.
	OwnedAnnotation = "autoscaling.tidal.dev/deletion-cost-set"
)

// Costs tidal writes. The ReplicaSet controller reads the annotation as an
// int32.
const (
	// VictimCost is the cost of the replica to go first; the next one to
	// go has VictimCost+1, and so on.
	VictimCost = -1000000
	// KeepCost is the cost of replicas on nodes scale-down cannot remove:
	// taking them away frees no node.
	KeepCost = 1000000
	// maxRank bounds the victims' ranks so that their costs stay negative.
	maxRank = 999999
)

// Node is what the node loop knows of a node.
type Node struct {
	Name  string
	Group string
	// Utilization is the node's utilization as scale-down computes it.
	Utilization float64
	// Removable: the node is a scale-down candidate that nothing but its
	// pods keeps (a node-group member, not annotated scale-down-disabled,
	// not blocked by a pod, its group above its minimum).
	Removable bool
	// Pods are the UIDs of the pods a drain of the node would have to
	// move (not DaemonSet, mirror or finished pods); set on removable
	// nodes.
	Pods []types.UID
}

// Replica is one of the workload's pods, as listed.
type Replica struct {
	Name string
	UID  types.UID
	// Node is where the pod is bound; empty while it is unscheduled.
	Node string
	// Early: the ReplicaSet deletes the pod before any cost counts (it is
	// not running or not ready).
	Early bool
	// Cost is the annotation's value ("" when there is none), Owned
	// whether tidal set it.
	Cost  string
	Owned bool
}

// Patch is a cost to write on a pod. An empty Cost takes tidal's cost (and
// its mark) off the pod.
type Patch struct {
	Pod  string
	Cost string
}

// ChoosesByCost reports whether the workloads of kind remove replicas by
// their pod-deletion-cost: Deployments and ReplicaSets do (through the
// ReplicaSet controller); a StatefulSet removes its highest ordinals.
// Other kinds are left alone.
func ChoosesByCost(kind string) bool {
	return kind == "Deployment" || kind == "ReplicaSet"
}

// Decide returns the costs to write so that the ReplicaSet controller,
// removing remove replicas, removes those whose nodes scale-down would empty
// first. Replicas that go first whatever their cost (unscheduled, not
// running, not ready) count against remove. The others go by node: nodes
// that this scale-in empties outright first, then removable nodes by
// utilization (lowest first, as scale-down orders them), then nodes that
// cannot be removed. Replicas on those get KeepCost; tidal's old costs on
// the remaining replicas are taken off. Replicas whose cost the user set
// are left alone. Only changes are returned, the replicas to go first; none
// when all replicas go. The result does not depend on the order of nodes
// and replicas.
func Decide(nodes []Node, replicas []Replica, remove int) []Patch {
	if remove <= 0 || remove >= len(replicas) {
		// Nothing goes, or everything does: there is no choice to make.
		return nil
	}
	byName := make(map[string]Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	ranked := rank(byName, replicas, remove)
	victims := make(map[string]int, len(ranked))
	for i, r := range ranked {
		victims[r.Name] = i
	}
	var out, rest []Patch
	for _, r := range ranked {
		out = appendChange(out, r, strconv.Itoa(VictimCost+min(victims[r.Name], maxRank)))
	}
	for _, r := range sortedReplicas(replicas) {
		if _, ok := victims[r.Name]; ok {
			continue
		}
		want := ""
		if n, ok := byName[r.Node]; ok && !n.Removable {
			want = strconv.Itoa(KeepCost)
		}
		rest = appendChange(rest, r, want)
	}
	return append(out, rest...)
}

// appendChange adds a patch setting r's cost to want, unless it has that
// cost already or the user set it.
func appendChange(out []Patch, r Replica, want string) []Patch {
	switch {
	case r.Cost != "" && !r.Owned:
		return out
	case want == "" && !r.Owned:
		return out
	case r.Owned && r.Cost == want:
		return out
	}
	return append(out, Patch{Pod: r.Name, Cost: want})
}

// rank returns the replicas to go, first first: those the ReplicaSet
// takes first anyway, then the best ones by node (see Decide).
func rank(nodes map[string]Node, replicas []Replica, remove int) []Replica {
	sorted := sortedReplicas(replicas)
	var out []Replica
	onNode := map[string][]Replica{}
	for _, r := range sorted {
		switch {
		case r.Node == "":
			out = append(out, r)
		case r.Early, r.Cost != "" && !r.Owned:
			// Early ones are taken below; a replica whose cost the user
			// set goes when the user's cost says.
		default:
			onNode[r.Node] = append(onNode[r.Node], r)
		}
	}
	for _, r := range sorted {
		if r.Node != "" && r.Early {
			out = append(out, r)
		}
	}
	if len(out) >= remove {
		return out[:remove]
	}
	order := nodeOrder(nodes, onNode)
	taken := map[string]bool{}
	// First the nodes the scale-in empties outright, as many as fit.
	for _, name := range order {
		if rs := onNode[name]; emptied(nodes[name], rs) && len(out)+len(rs) <= remove {
			out, taken[name] = append(out, rs...), true
		}
	}
	for _, name := range order {
		if !taken[name] {
			out = append(out, onNode[name][:min(len(onNode[name]), remove-len(out))]...)
		}
	}
	return out
}

// nodeOrder sorts the nodes holding replicas: removable nodes the scale-in
// would empty, other removable nodes, then the rest; each by utilization,
// lowest first, then name. Nodes the view lacks count as not removable.
func nodeOrder(nodes map[string]Node, onNode map[string][]Replica) []string {
	names := make([]string, 0, len(onNode))
	for name := range onNode {
		names = append(names, name)
	}
	class := func(name string) int {
		n, ok := nodes[name]
		switch {
		case !ok || !n.Removable:
			return 2
		case emptied(n, onNode[name]):
			return 0
		}
		return 1
	}
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(class(a), class(b)), cmp.Compare(nodes[a].Utilization, nodes[b].Utilization), cmp.Compare(a, b))
	})
	return names
}

// emptied reports whether the node is removable and holds no pod to move
// but the replicas rs.
func emptied(n Node, rs []Replica) bool {
	if !n.Removable {
		return false
	}
	ours := make(map[types.UID]bool, len(rs))
	for _, r := range rs {
		ours[r.UID] = true
	}
	for _, uid := range n.Pods {
		if !ours[uid] {
			return false
		}
	}
	return true
}

func sortedReplicas(replicas []Replica) []Replica {
	out := slices.Clone(replicas)
	slices.SortFunc(out, func(a, b Replica) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
