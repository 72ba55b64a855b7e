// Package estimator answers, for one node group, how many new nodes would
// make how many pending pods schedulable: it packs the pods onto copies of
// the group's template node in a forked snapshot, checking every placement
// with the scheduler's own Filter plugins.
package estimator

import (
	"context"
	"errors"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tidal-autoscaler/tidal/simulator"
)

// Work is one pod group to pack: its check and the pods still pending.
type Work struct {
	Check *simulator.GroupCheck
	Pods  []*corev1.Pod
}

// Limits bound one estimate.
type Limits struct {
	// MaxNodes is the most new nodes the estimate may use (group headroom,
	// cluster limits, --max-nodes-per-scaleup): 0 means none.
	MaxNodes int
}

// Estimate is how many nodes of a group help which pods.
type Estimate struct {
	GroupID   string
	NodeCount int
	// Nodes names the new nodes the pods use, in the order they were added
	// (with keep, they are the snapshot's names of those nodes).
	Nodes []string
	// Pods are the pending pods the new nodes would run.
	Pods []*corev1.Pod
	// Rejected holds, per pod group that does not fit even an empty new
	// node, the scheduler's reason.
	Rejected map[*simulator.PodGroup]*fwk.Status
	// Shortfalls holds, for those of Rejected that an empty node lacks
	// room for, the numbers: "Insufficient cpu (needs 3, free 1.5)".
	Shortfalls map[*simulator.PodGroup][]string
	// LimitReached is set when pods that fit the template were left out
	// because MaxNodes was reached.
	LimitReached bool
	// TimedOut is set when the deadline cut the estimate short.
	TimedOut bool
}

// Binpack packs work onto new copies of tmpl, first-fit over pod groups in
// decreasing size. The snapshot is left as it was unless keep is set, in
// which case the new nodes and pods stay (in the snapshot's current fork).
// The context's deadline bounds the packing (see Estimate.TimedOut).
func Binpack(ctx context.Context, c *simulator.Checker, tmpl *simulator.NodeTemplate, work []Work, lim Limits, keep bool) (*Estimate, error) {
	snap := c.Snapshot()
	snap.Fork()
	if keep {
		defer snap.Commit()
	} else {
		defer snap.Revert()
	}
	p := &packer{c: c, tmpl: tmpl, lim: lim, est: &Estimate{GroupID: tmpl.GroupID, Rejected: map[*simulator.PodGroup]*fwk.Status{},
		Shortfalls: map[*simulator.PodGroup][]string{}},
		used: map[string]bool{}, novelDomains: novelDomains(snap, tmpl)}
	for _, w := range orderBySize(work, tmpl.Node) {
		if err := p.packGroup(ctx, w); err != nil {
			return nil, err
		}
		if p.est.TimedOut {
			break
		}
	}
	p.est.NodeCount = len(p.used)
	for _, ni := range p.nodes {
		name := ni.Node().Name
		if p.used[name] {
			p.est.Nodes = append(p.est.Nodes, name)
			continue
		}
		// A kept snapshot must not hold a node no pod needs: it would be
		// room (and a topology domain) that no scale-up asks for.
		if keep {
			if err := snap.RemoveNode(name); err != nil {
				return nil, fmt.Errorf("node group %s: drop unused node %s: %w", tmpl.GroupID, name, err)
			}
		}
	}
	return p.est, nil
}

type packer struct {
	c      *simulator.Checker
	tmpl   *simulator.NodeTemplate
	lim    Limits
	est    *Estimate
	nodes  []fwk.NodeInfo
	used   map[string]bool
	placed []simulator.Placed
	serial int
	// novelDomains is set when the template's topology labels (other than
	// hostname) name domains no node in the snapshot has: topology spread
	// state computed before the first copy was added must then be redone.
	novelDomains map[string]bool
}

func (p *packer) packGroup(ctx context.Context, w Work) error {
	gc, err := p.c.CatchUp(ctx, w.Check, p.placed)
	if err != nil {
		return err
	}
	refreshed := false
	var cur simulator.Cursor
	for _, pod := range w.Pods {
		idx := p.c.FindNode(ctx, gc, p.nodes, &cur)
		if idx < 0 {
			if p.hasEmptyNode() {
				p.reject(ctx, gc, p.nodes[len(p.nodes)-1])
				return nil
			}
			if !p.canAddNode(ctx) {
				return nil
			}
			ni, err := p.addNode()
			if err != nil {
				return err
			}
			if !refreshed && p.needsRefresh(gc) {
				if gc, err = p.c.CheckGroup(ctx, gc.Group); err != nil {
					return err
				}
				refreshed = true
			}
			if st := p.c.Fits(ctx, gc, ni); !st.IsSuccess() {
				p.rejected(gc, ni, st)
				return nil
			}
			idx = len(p.nodes) - 1
			cur.MoveTo(idx)
		}
		name := p.nodes[idx].Node().Name
		placed, err := p.c.Place(ctx, gc.PodCheck, pod, name)
		if err != nil {
			return fmt.Errorf("node group %s: %w", p.tmpl.GroupID, err)
		}
		p.placed = append(p.placed, placed)
		p.used[name] = true
		p.est.Pods = append(p.est.Pods, pod)
	}
	return nil
}

// hasEmptyNode reports whether the newest node holds no pending pod: the
// pod at hand did not fit even there.
func (p *packer) hasEmptyNode() bool {
	return len(p.nodes) > 0 && !p.used[p.nodes[len(p.nodes)-1].Node().Name]
}

func (p *packer) reject(ctx context.Context, gc *simulator.GroupCheck, empty fwk.NodeInfo) {
	if st := p.c.Fits(ctx, gc, empty); !st.IsSuccess() {
		p.rejected(gc, empty, st)
	}
}

// rejected records why the group's pods do not fit the empty node ni,
// with the numbers when it lacks room.
func (p *packer) rejected(gc *simulator.GroupCheck, ni fwk.NodeInfo, st *fwk.Status) {
	p.est.Rejected[gc.Group] = st
	if short := gc.Shortfalls(ni); len(short) > 0 {
		p.est.Shortfalls[gc.Group] = short
	}
}

// canAddNode tells whether another node may be added: not past MaxNodes,
// and, once the estimate has a node, not past the context's deadline (an
// estimate out of time still offers what fits on one node).
func (p *packer) canAddNode(ctx context.Context) bool {
	if p.lim.MaxNodes > 0 && len(p.used) >= p.lim.MaxNodes {
		p.est.LimitReached = true
		return false
	}
	if len(p.used) > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		p.est.TimedOut = true
		return false
	}
	return true
}

func (p *packer) addNode() (fwk.NodeInfo, error) {
	snap := p.c.Snapshot()
	name := fmt.Sprintf("%s-new-%d", p.tmpl.GroupID, p.serial)
	for snap.NodeInfo(name) != nil {
		p.serial++
		name = fmt.Sprintf("%s-new-%d", p.tmpl.GroupID, p.serial)
	}
	p.serial++
	ni, err := p.tmpl.AddCopy(snap, name)
	if err != nil {
		return nil, fmt.Errorf("node group %s: add template copy: %w", p.tmpl.GroupID, err)
	}
	p.nodes = append(p.nodes, ni)
	return ni, nil
}

// needsRefresh tells whether the group spreads over a topology key for
// which the template opens a domain the cluster did not have.
func (p *packer) needsRefresh(gc *simulator.GroupCheck) bool {
	for _, c := range gc.Pod.Spec.TopologySpreadConstraints {
		if p.novelDomains[c.TopologyKey] {
			return true
		}
	}
	return false
}

func novelDomains(s *simulator.Snapshot, tmpl *simulator.NodeTemplate) map[string]bool {
	novel := map[string]bool{}
	for key, value := range tmpl.Node.Labels {
		if key == corev1.LabelHostname {
			continue
		}
		novel[key] = true
		for _, ni := range s.Infos() {
			if ni.Node().Labels[key] == value {
				novel[key] = false
				break
			}
		}
	}
	return novel
}

// orderBySize sorts pod groups by how much of a template node one pod
// takes, largest first: first-fit decreasing.
func orderBySize(work []Work, node *corev1.Node) []Work {
	out := append([]Work(nil), work...)
	scores := make(map[*simulator.GroupCheck]float64, len(out))
	for _, w := range out {
		scores[w.Check] = Size(w, node)
	}
	sort.SliceStable(out, func(i, j int) bool { return scores[out[i].Check] > scores[out[j].Check] })
	return out
}

// Size is how much of node one pod of w takes: its cpu share plus its
// memory share of the node's allocatable.
func Size(w Work, node *corev1.Node) float64 {
	alloc := node.Status.Allocatable
	cpu, mem := float64(alloc.Cpu().MilliValue()), float64(alloc.Memory().Value())
	reqCPU, reqMem := w.Check.Requests()
	s := 0.0
	if cpu > 0 {
		s += float64(reqCPU) / cpu
	}
	if mem > 0 {
		s += float64(reqMem) / mem
	}
	return s
}
