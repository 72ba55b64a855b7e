package scaleup

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Bounds of the whole-plan search: above them the greedy plan stands (a
// burst that large is homogeneous enough that rounds pack it well, and
// every variant costs about one round of estimates).
const (
	maxWholePlanNodes = 200
	maxWholePlanPods  = 2000
)

// before is the plan as the filter left it, before any round.
type before struct {
	fitExisting int
	awaiting    map[types.UID]string
	placed      int
}

func (d *decision) save() before {
	return before{fitExisting: d.plan.FitExisting, awaiting: maps.Clone(d.plan.Awaiting), placed: len(d.placed)}
}

// wholePlan compares the greedy plan the rounds made with plans that pack
// all its pods at once over the groups the expander chose, and keeps the
// one with the fewest new nodes; the greedy plan wins ties, so the
// expander's choice stands unless nodes are saved. A packing is a
// candidate only when it helps every pod the greedy plan helps. The
// snapshot must be as the filter left it.
func (d *decision) wholePlan(ctx context.Context, remaining []pending, b before) error {
	greedy := d.greedyNodes()
	if d.in.greedyOnly || d.in.BalanceSimilar || greedy <= 1 || greedy > maxWholePlanNodes || timedOut(ctx) {
		return nil
	}
	helped, groups := d.greedyHelped(), d.chosenGroups()
	if len(helped) > maxWholePlanPods || greedy <= d.lowerBound(helped, groups) {
		return nil
	}
	// Every packing starts from the snapshot as the filter left it: the
	// checks and hosts hold for each.
	work, err := d.checks(ctx, remaining)
	if err != nil {
		return err
	}
	hosts, err := d.hostsOf(ctx, work, groups)
	if err != nil {
		return err
	}
	var best *packing
	snap := d.in.Checker.Snapshot()
	for _, v := range variants {
		snap.Fork()
		p, err := d.joint(ctx, work, hosts, groups, v)
		snap.Revert()
		if err != nil {
			return err
		}
		if p == nil {
			break
		}

		if p.nodes < greedy && (best == nil || p.nodes < best.nodes) && coversAll(p.helped, helped) {
			if ok, err := d.stable(ctx, p); err != nil {
				return err
			} else if ok {
				best = p
			}
		}
	}
	d.plan.GreedyNodes = greedy
	if best == nil {
		return nil
	}
	d.adopt(best, b)
	return nil
}

// adopt makes the packing the plan: its scale-ups replace the rounds', and
// pods the rounds placed on known nodes are the packing's now.
func (d *decision) adopt(p *packing, b before) {
	decision := d.plan.ScaleUps[0].Decision
	summary := d.plan.ScaleUps[0].Estimates
	for i := range p.ups {
		p.ups[i].Decision, p.ups[i].Estimates = decision, summary
	}
	d.plan.ScaleUps = p.ups
	d.plan.Planner = p.name
	d.plan.FitExisting, d.plan.Awaiting = b.fitExisting, b.awaiting
	var left []NoScaleUp
	for _, n := range d.plan.NoScaleUp {
		var pods []*corev1.Pod
		for _, pod := range n.Pods {
			if !p.helped[podKey(pod)] {
				pods = append(pods, pod)
			}
		}
		if len(pods) > 0 {
			n.Pods = pods
			left = append(left, n)
		}
	}
	d.plan.NoScaleUp = left
}

func (d *decision) greedyNodes() int {
	n := 0
	for _, u := range d.plan.ScaleUps {
		n += u.To - u.From
	}
	return n
}

// greedyHelped are the pods the rounds found a node for: on their new
// nodes or, in later rounds, on known ones.
func (d *decision) greedyHelped() map[string]*corev1.Pod {
	out := map[string]*corev1.Pod{}
	for _, u := range d.plan.ScaleUps {
		for _, p := range u.Pods {
			out[podKey(p)] = p
		}
	}
	for _, p := range d.credited {
		out[podKey(p)] = p
	}
	return out
}

// chosenGroups are the groups of the greedy plan's scale-ups, in the order
// the expander chose them.
func (d *decision) chosenGroups() []string {
	var out []string
	seen := map[string]bool{}
	for _, u := range d.plan.ScaleUps {
		if !seen[u.Group] {
			seen[u.Group] = true
			out = append(out, u.Group)
		}
	}
	return out
}

// lowerBound is the fewest nodes of the chosen groups' largest template
// that the pods' cpu and memory requests need: a plan with that many
// nodes cannot be beaten.
func (d *decision) lowerBound(pods map[string]*corev1.Pod, groups []string) int {
	var cpu, mem, nodeCPU, nodeMem int64
	for _, id := range groups {
		a := d.groupByID(id).Template.Node.Status.Allocatable
		nodeCPU, nodeMem = max(nodeCPU, a.Cpu().MilliValue()), max(nodeMem, a.Memory().Value())
	}
	for _, p := range pods {
		for _, c := range p.Spec.Containers {
			cpu += c.Resources.Requests.Cpu().MilliValue()
			mem += c.Resources.Requests.Memory().Value()
		}
	}
	need := func(want, have int64) int {
		if have <= 0 {
			return 0
		}
		return int((want + have - 1) / have)
	}
	return max(need(cpu, nodeCPU), need(mem, nodeMem))
}

func coversAll(helped map[string]bool, want map[string]*corev1.Pod) bool {
	for k := range want {
		if !helped[k] {
			return false
		}
	}
	return true
}
