package scaleup

import (
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tidal-autoscaler/tidal/simulator"
)

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
// adds them): where they are the same, diff stays as it was. same tells
// that g's are run's, not added to diff.
func (r *filterReuse) done(run *groupRun, same bool) {
	if run != nil {
		if !same {
			r.add(run.placed, ^uint64(0))
		}
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
	r.addRun(g, local, placed)
}

// addRun notes how g was placed, for the next filter (diff left as is).
func (r *filterReuse) addRun(g *simulator.PodGroup, local bool, placed []simulator.Placed) {
	var uids []types.UID
	if j, ok := r.byKey[g.Key]; ok && r.prev.groups[j].samePods(g) {
		// The same pods: the list is shared (no run changes its own).
		uids = r.prev.groups[j].pods
	} else {
		uids = make([]types.UID, len(g.Pods))
		for i, p := range g.Pods {
			uids[i] = p.UID
		}
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

// dirty calls f with each node whose answer for a reused group may differ:
// those changed and those where the groups before it placed other pods,
// until f returns an error.
func (r *filterReuse) dirty(f func(name string) error) error {
	for name := range r.changed {
		if err := f(name); err != nil {
			return err
		}
	}
	for name := range r.diff {
		if !r.changed[name] {
			if err := f(name); err != nil {
				return err
			}
		}
	}
	return nil
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
	err = r.dirty(func(name string) error {
		i, ok := list.at[name]
		if !ok || i > limit || i >= cut {
			return nil
		}
		no, err := refuses(name)
		if err == nil && !no {
			cut = i
		}
		return err
	})
	if err != nil {
		return 0, false, "", err
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
