package consolidate

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// sim is one Decide's simulation on the fork of the snapshot.
type sim struct {
	in Input
	// used are the nodes a move of the plan took: its old nodes, the
	// nodes it moved pods onto, its new nodes.
	used map[string]bool
	// serial names the new nodes pictured; added counts the new nodes
	// of each group the plan's moves take.
	serial int
	added  map[string]int
}

// clear takes the nodes being removed out of the snapshot, and the nodes
// scale-down plans to remove with their pods placed on the others, so no
// replacement counts on their room. why is set when a leaving pod finds
// no room (scale-down's plan and this one disagree: nothing is proposed).
func (s *sim) clear(ctx context.Context) (why string, err error) {
	snap := s.in.Checker.Snapshot()
	for _, name := range slices.Sorted(slices.Values(s.in.Deleting)) {
		if snap.NodeInfo(name) != nil {
			if err := snap.RemoveNode(name); err != nil {
				return "", err
			}
		}
	}
	leaving := slices.SortedFunc(slices.Values(s.in.Leaving), func(a, b Leaving) int { return cmp.Compare(a.Node, b.Node) })
	for _, l := range leaving {
		s.used[l.Node] = true
	}
	for _, l := range leaving {
		ni := snap.NodeInfo(l.Node)
		if ni == nil {
			continue
		}
		infos := parsed(ni, l.Pods)
		if err := snap.RemoveNode(l.Node); err != nil {
			return "", err
		}
		dests, p, err := s.placeAll(ctx, infos, nil)
		if err != nil || p != nil {
			if p != nil {
				why = fmt.Sprintf("pod %s/%s of node %s, which scale-down removes, finds no room", p.Namespace, p.Name, l.Node)
			}
			return why, err
		}
		// Their destinations hold pods that are not there yet: no move
		// of this plan replaces them.
		s.take(dests)
	}
	return "", nil
}

// multi is the multi-node replacement of the largest prefix of cands (at
// most MaxNodes) that fits on fewer, cheaper new nodes of one group; nil
// when none does.
func (s *sim) multi(ctx context.Context, cands []candidate, pdbs *scaledown.PDBBudgets, budget *scaledown.Disruptions) (*Replacement, error) {
	for k := min(s.in.MaxNodes, len(cands)); k >= 2; k-- {
		r, _, err := s.try(ctx, cands[:k], k-1, pdbs, budget)
		if err != nil || r != nil {
			return r, err
		}
	}
	return nil, nil
}

// single is the replacement of one node by one cheaper new node; why says
// why there is none.
func (s *sim) single(ctx context.Context, c candidate, pdbs *scaledown.PDBBudgets, budget *scaledown.Disruptions) (*Replacement, string, error) {
	return s.try(ctx, []candidate{c}, 1, pdbs, budget)
}

// try is the cheapest replacement of set by at most maxNew new nodes of
// one group that saves enough; the snapshot keeps it (old nodes gone, new
// nodes there with the pods) when found.
func (s *sim) try(ctx context.Context, set []candidate, maxNew int, pdbs *scaledown.PDBBudgets, budget *scaledown.Disruptions) (*Replacement, string, error) {
	byGroup := map[string]int{}
	oldCost := 0.0
	for _, c := range set {
		byGroup[c.Group]++
		oldCost += c.price
	}
	for g, n := range byGroup {
		if grp := s.in.Groups[g]; grp.Target-n < grp.Min {
			return nil, fmt.Sprintf("node group %s at its minimum size %d", g, grp.Min), nil
		}
	}
	if !budget.Allows(byGroup) {
		return nil, "disruption budget spent", nil
	}
	var pods []*corev1.Pod
	for _, c := range set {
		pods = append(pods, c.pods.ToMove...)
	}
	if b := pdbs.Reserve(pods); b != nil {
		return nil, b.String(), nil
	}
	best, why, err := s.cheapest(ctx, set, maxNew, oldCost)
	if err != nil || best == nil {
		pdbs.Release(pods)
		return nil, why, err
	}
	// Do it again on the snapshot for good, so later moves see it.
	if _, _, err := s.replace(ctx, set, best.Group, best.Count, true); err != nil {
		return nil, "", err
	}
	budget.Spend(byGroup)
	for _, c := range set {
		best.Old = append(best.Old, Old{Node: c.Name, Group: c.Group, Pods: c.pods})
	}
	best.Kind = KindSingle
	if len(set) > 1 {
		best.Kind = KindMulti
	}
	return best, "", nil
}

// cheapest tries each priced group with a template and room, cheapest
// first, and returns the replacement with the lowest new cost that saves
// enough.
func (s *sim) cheapest(ctx context.Context, set []candidate, maxNew int, oldCost float64) (*Replacement, string, error) {
	ids := slices.SortedFunc(maps.Keys(s.in.Groups), func(a, b string) int {
		return cmp.Or(cmp.Compare(s.in.Groups[a].Price, s.in.Groups[b].Price), cmp.Compare(a, b))
	})
	why := "no cheaper node group holds its pods"
	var best *Replacement
	for _, id := range ids {
		g := s.in.Groups[id]
		room := min(maxNew, g.Max-g.Target-s.added[id])
		if !g.Priced || g.Template == nil || room < 1 || !s.in.Min.enough(oldCost-g.Price, oldCost) {
			continue
		}
		n, fits, err := s.replace(ctx, set, id, room, false)
		if err != nil {
			return nil, "", err
		}
		if fits && n == 0 {
			return nil, removal, nil
		}
		if !fits {
			continue
		}
		cost := float64(n) * g.Price
		if !s.in.Min.enough(oldCost-cost, oldCost) {
			why = fmt.Sprintf("saving %.4f/h of %.4f/h is below the minimum", oldCost-cost, oldCost)
			continue
		}
		if best == nil || cost < best.NewCost {
			best = &Replacement{Group: id, Count: n, OldCost: oldCost, NewCost: cost, Saving: oldCost - cost}
		}
	}
	return best, why, nil
}

// replace removes the set's nodes and places their pods, largest first,
// on the nodes that stay and on at most maxNew new nodes of group, opened
// as needed. It returns whether they fit and how many new nodes it took.
// With keep the change stays in the snapshot, else it is undone.
func (s *sim) replace(ctx context.Context, set []candidate, group string, maxNew int, keep bool) (int, bool, error) {
	snap := s.in.Checker.Snapshot()
	snap.Fork()
	var infos []*framework.PodInfo
	for _, c := range set {
		infos = append(infos, parsed(snap.NodeInfo(c.Name), c.pods.ToMove)...)
	}
	for _, c := range set {
		if err := snap.RemoveNode(c.Name); err != nil {
			snap.Revert()
			return 0, false, err
		}
	}
	opened := &newNodes{group: s.in.Groups[group].Template, max: maxNew, base: fmt.Sprintf("consolidation-%s-%d", group, s.serial)}
	dests, unplaced, err := s.placeAll(ctx, largestFirst(infos), opened)
	if err != nil || unplaced != nil || !keep {
		snap.Revert()
		return len(opened.names), err == nil && unplaced == nil, err
	}
	snap.Commit()
	s.serial++
	s.added[group] += len(opened.names)
	for _, c := range set {
		s.used[c.Name] = true
	}
	s.take(dests)
	return len(opened.names), true, nil
}

// take marks nodes as taken by a move of the plan.
func (s *sim) take(nodes []string) {
	for _, n := range nodes {
		s.used[n] = true
	}
}

// newNodes are the new nodes a placement may open.
type newNodes struct {
	group *simulator.NodeTemplate
	max   int
	base  string
	names []string
}

// placeAll places each pod on a node of the snapshot no other move took,
// the new nodes first (so a replacement leans on the nodes that stay as
// little as it can), opening a new node when none fits and opened allows;
// it returns where the pods went, or the first pod that fits nowhere. The
// snapshot keeps the placements.
func (s *sim) placeAll(ctx context.Context, infos []*framework.PodInfo, opened *newNodes) (dests []string, unplaced *corev1.Pod, err error) {
	c := s.in.Checker
	snap := c.Snapshot()
	if opened != nil && opened.max > 0 && len(infos) > 0 {
		if _, err := opened.open(snap); err != nil {
			return nil, nil, err
		}
	}
	for _, info := range infos {
		gc := c.CheckPod(ctx, scaledown.MovedPod(info))
		dest := s.find(ctx, gc, snap.Infos(), opened)
		if dest == "" && opened != nil && len(opened.names) < opened.max {
			ni, err := opened.open(snap)
			if err != nil {
				return nil, nil, err
			}
			// A new node may be a topology domain not seen before.
			gc = c.CheckPod(ctx, scaledown.MovedPod(info))
			if c.Fits(ctx, gc, ni) == nil {
				dest = ni.Node().Name
			}
		}
		if dest == "" {
			return nil, info.Pod, nil
		}
		if err := snap.AddPod(info, dest); err != nil {
			return nil, nil, err
		}
		dests = append(dests, dest)
	}
	return dests, nil, nil
}

// find is the first node the pod fits on that no other move took: the
// new nodes this move opened first, then the others by name; or "".
func (s *sim) find(ctx context.Context, gc *simulator.GroupCheck, infos []fwk.NodeInfo, opened *newNodes) string {
	mine := func(name string) bool { return opened != nil && slices.Contains(opened.names, name) }
	nodes := slices.SortedFunc(slices.Values(infos), func(a, b fwk.NodeInfo) int {
		x, y := a.Node().Name, b.Node().Name
		return cmp.Or(-cmp.Compare(btoi(mine(x)), btoi(mine(y))), cmp.Compare(x, y))
	})
	for _, ni := range nodes {
		name := ni.Node().Name
		if s.used[name] && !mine(name) {
			continue
		}
		if s.in.Checker.Fits(ctx, gc, ni) == nil {
			return name
		}
	}
	return ""
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// open adds a new node of the group to the snapshot.
func (n *newNodes) open(snap *simulator.Snapshot) (*framework.NodeInfo, error) {
	name := fmt.Sprintf("%s-%d", n.base, len(n.names))
	ni, err := n.group.AddCopy(snap, name)
	if err != nil {
		return nil, err
	}
	n.names = append(n.names, name)
	return ni, nil
}

// largestFirst sorts pods by cpu then memory request, largest first, then
// by namespace and name: first-fit decreasing.
func largestFirst(infos []*framework.PodInfo) []*framework.PodInfo {
	return slices.SortedStableFunc(slices.Values(infos), func(a, b *framework.PodInfo) int {
		ra, rb := a.CalculateResource().Resource, b.CalculateResource().Resource
		return cmp.Or(cmp.Compare(rb.GetMilliCPU(), ra.GetMilliCPU()), cmp.Compare(rb.GetMemory(), ra.GetMemory()),
			cmp.Compare(a.Pod.Namespace, b.Pod.Namespace), cmp.Compare(a.Pod.Name, b.Pod.Name))
	})
}

// parsed returns the node's parsed pods for pods (those it holds).
func parsed(ni *framework.NodeInfo, pods []*corev1.Pod) []*framework.PodInfo {
	want := make(map[*corev1.Pod]bool, len(pods))
	for _, p := range pods {
		want[p] = true
	}
	var out []*framework.PodInfo
	for _, pi := range ni.Pods {
		if info, ok := pi.(*framework.PodInfo); ok && want[info.Pod] {
			out = append(out, info)
		}
	}
	return out
}
