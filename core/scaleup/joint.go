package scaleup

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tidal-autoscaler/tidal/estimator"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// variant is one way to pack all pending pods at once onto new nodes of
// several groups.
type variant struct {
	name string
	// constrainedFirst packs the pod groups that fewer node groups can
	// host first (then by size); otherwise by size alone.
	constrainedFirst bool
	// bestFit puts a pod on the new node it fills most, not the first.
	bestFit bool
	// reverse prefers the node groups in the reverse of the order the
	// expander chose them, when a new node is opened.
	reverse bool
}

var variants = []variant{
	{name: "constrained-first/best-fit", constrainedFirst: true, bestFit: true},
	{name: "constrained-first/best-fit/reversed", constrainedFirst: true, bestFit: true, reverse: true},
	{name: "largest-first/best-fit", bestFit: true},
	{name: "constrained-first/first-fit", constrainedFirst: true},
	{name: "largest-first/best-fit/reversed", bestFit: true, reverse: true},
	{name: "largest-first/first-fit"},
}

// packing is what a variant planned: its scale-ups and the pods they help.
type packing struct {
	name   string
	ups    []ScaleUp
	nodes  int
	helped map[string]bool
}

// joint packs the work onto new nodes of groups (most preferred first), in
// the snapshot's current fork, as the variant says; hosts lists which
// groups can host each pod group. It returns nil when the deadline passed.
func (d *decision) joint(ctx context.Context, work []estimator.Work, hosts map[*simulator.PodGroup][]string, groups []string, v variant) (*packing, error) {
	j := &jointPacker{d: d, v: v, groups: groups, planned: map[string]int{}, byGroup: map[string][]*corev1.Pod{},
		nodeGroup: map[string]string{}, hosts: hosts, out: &packing{name: v.name, helped: map[string]bool{}}}
	if v.reverse {
		j.groups = reversed(groups)
		j.hosts = map[*simulator.PodGroup][]string{}
		for g, ids := range hosts {
			j.hosts[g] = reversed(ids)
		}
	}
	j.domains = presentDomains(d.in.Checker.Snapshot(), work)
	for _, w := range j.order(work) {
		if timedOut(ctx) {
			return nil, nil
		}
		if err := j.packGroup(ctx, w); err != nil {
			return nil, err
		}
	}
	return j.finish(), nil
}

type jointPacker struct {
	d       *decision
	v       variant
	groups  []string
	planned map[string]int
	nodes   []fwk.NodeInfo
	// nodeGroup maps a new node's name to its group.
	nodeGroup map[string]string
	byGroup   map[string][]*corev1.Pod
	placed    []simulator.Placed
	// hosts lists, per pod group, the node groups whose empty node takes
	// one of its pods, most preferred first.
	hosts   map[*simulator.PodGroup][]string
	domains map[string]bool
	serial  int
	out     *packing
}

// hostsOf finds which groups can host each pod group, in the order of
// groups, on an empty copy of each template that is taken out again.
func (d *decision) hostsOf(ctx context.Context, work []estimator.Work, groups []string) (map[*simulator.PodGroup][]string, error) {
	hosts := map[*simulator.PodGroup][]string{}
	snap := d.in.Checker.Snapshot()
	for _, id := range groups {
		g := d.groupByID(id)
		snap.Fork()
		ni, err := g.Template.AddCopy(snap, "probe-"+id)
		if err != nil {
			snap.Revert()
			return nil, fmt.Errorf("node group %s: probe node: %w", id, err)
		}
		for _, w := range work {
			if d.in.Checker.Fits(ctx, w.Check, ni).IsSuccess() {
				hosts[w.Check.Group] = append(hosts[w.Check.Group], id)
			}
		}
		snap.Revert()
	}
	return hosts, nil
}

// order sorts the work as the variant says; ties keep the input's order
// (most important pods first).
func (j *jointPacker) order(work []estimator.Work) []estimator.Work {
	tmpl := j.d.groupByID(j.groups[0]).Template.Node
	size := func(w estimator.Work) float64 { return estimator.Size(w, tmpl) }
	out := append([]estimator.Work(nil), work...)
	sort.SliceStable(out, func(a, b int) bool {
		if j.v.constrainedFirst {
			ha, hb := len(j.hosts[out[a].Check.Group]), len(j.hosts[out[b].Check.Group])
			if ha != hb {
				return ha < hb
			}
		}
		return size(out[a]) > size(out[b])
	})
	return out
}

func (j *jointPacker) packGroup(ctx context.Context, w estimator.Work) error {
	if len(j.hosts[w.Check.Group]) == 0 {
		return nil
	}
	gc, err := j.d.in.Checker.CatchUp(ctx, w.Check, j.placed)
	if w.Check.Stateful() && len(j.nodes) > 0 {
		// The new nodes may be domains the group's check does not know.
		gc, err = j.d.checkGroup(ctx, w.Check.Group)
	}
	if err != nil {
		return err
	}
	var cur simulator.Cursor
	for _, pod := range w.Pods {
		idx := -1
		if j.v.bestFit {
			idx = j.d.in.Checker.FindBestNode(ctx, gc, j.nodes)
		} else {
			idx = j.d.in.Checker.FindNode(ctx, gc, j.nodes, &cur)
		}
		if idx < 0 {
			var ok bool
			if gc, ok, err = j.open(ctx, gc); err != nil {
				return err
			}
			if !ok {
				return nil
			}
			idx = len(j.nodes) - 1
			cur.MoveTo(idx)
		}
		name := j.nodes[idx].Node().Name
		pl, err := j.d.in.Checker.Place(ctx, gc.PodCheck, pod, name)
		if err != nil {
			return fmt.Errorf("whole plan %s: %w", j.v.name, err)
		}
		j.placed = append(j.placed, pl)
		group := j.nodeGroup[name]
		j.byGroup[group] = append(j.byGroup[group], pod)
		j.out.helped[podKey(pod)] = true
	}
	return nil
}

// open adds a new node for the group's next pod from the first group that
// has headroom and whose new node takes the pod; the node is left only if
// it does. It returns the group's check, renewed when the node opened a
// topology domain the pod spreads over.
func (j *jointPacker) open(ctx context.Context, gc *simulator.GroupCheck) (*simulator.GroupCheck, bool, error) {
	snap := j.d.in.Checker.Snapshot()
	for _, id := range j.hosts[gc.Group] {
		g := j.d.groupByID(id)
		if n, _ := j.d.headroomWith(*g, j.planned); n <= 0 {
			continue
		}
		name := j.newName(id)
		ni, err := g.Template.AddCopy(snap, name)
		if err != nil {
			return nil, false, fmt.Errorf("node group %s: add template copy: %w", id, err)
		}
		check := gc
		if j.opensDomain(gc, ni.Node()) {
			if check, err = j.d.checkGroup(ctx, gc.Group); err != nil {
				return nil, false, err
			}
		}
		if j.d.in.Checker.Fits(ctx, check, ni).IsSuccess() {
			j.nodes = append(j.nodes, ni)
			j.nodeGroup[name] = id
			j.planned[id]++
			return check, true, nil
		}
		if err := snap.RemoveNode(name); err != nil {
			return nil, false, fmt.Errorf("node group %s: drop unused node %s: %w", id, name, err)
		}
	}
	return gc, false, nil
}

func (j *jointPacker) newName(group string) string {
	snap := j.d.in.Checker.Snapshot()
	for {
		j.serial++
		name := fmt.Sprintf("%s-plan-%d", group, j.serial)
		if snap.NodeInfo(name) == nil {
			return name
		}
	}
}

// opensDomain tells whether node is the first in the snapshot with a value
// of a topology key the group spreads over, which a check made before it
// existed does not count.
func (j *jointPacker) opensDomain(gc *simulator.GroupCheck, node *corev1.Node) bool {
	opened := false
	for _, c := range gc.Pod.Spec.TopologySpreadConstraints {
		v, ok := node.Labels[c.TopologyKey]
		if !ok {
			continue
		}
		if key := c.TopologyKey + "=" + v; !j.domains[key] {
			j.domains[key] = true
			opened = true
		}
	}
	return opened
}

// finish turns the packing into one scale-up per group, in the groups'
// order of preference.
func (j *jointPacker) finish() *packing {
	for _, id := range j.groups {
		n := j.planned[id]
		if n == 0 {
			continue
		}
		g := j.d.groupByID(id)
		from := g.Target
		j.out.ups = append(j.out.ups, ScaleUp{Group: id, From: from, To: from + n, Max: g.Max, Pods: j.byGroup[id]})
		j.out.nodes += n
	}
	return j.out
}

// presentDomains are the key=value pairs of the topology keys the work
// spreads over that some node of the snapshot has.
func presentDomains(s *simulator.Snapshot, work []estimator.Work) map[string]bool {
	keys := map[string]bool{}
	for _, w := range work {
		if w.Check.Status != nil {
			continue
		}
		for _, c := range w.Check.Pod.Spec.TopologySpreadConstraints {
			keys[c.TopologyKey] = true
		}
	}
	out := map[string]bool{}
	if len(keys) == 0 {
		return out
	}
	for _, ni := range s.Infos() {
		for k := range keys {
			if v, ok := ni.Node().Labels[k]; ok {
				out[k+"="+v] = true
			}
		}
	}
	return out
}

func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}
