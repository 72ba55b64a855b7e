package core

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// capacityView is what the pod loop reads of the node loop after each
// iteration: which pending pods await which node group, and how many nodes
// each group is adding.
type capacityView struct {
	// awaits maps pending pods' UIDs to the node group planned for them.
	awaits map[types.UID]awaited
	adding map[string]int
	// stalled, when set, says why the node loop is not scaling up.
	stalled string
	// at is when the iteration observed the cluster: pods created later
	// have not been judged yet.
	at time.Time
}

type awaited struct{ namespace, group string }

// publishCapacity publishes the iteration's capacity view and, when the pods
// awaiting nodes changed, tells the pod loop which namespaces to look at
// again, so its autoscalers' WaitingForCapacity conditions follow at once.
func (p *publisher) publishCapacity(r *Iteration) {
	v := &capacityView{awaits: map[types.UID]awaited{}, adding: map[string]int{}, at: r.observed.now}
	if !r.health.Healthy {
		v.stalled = "the node loop does not scale up: " + r.health.Reason
	}
	if r.plan != nil {
		byUID := map[types.UID]string{}
		for _, pod := range r.observed.pending {
			if !pictured(pod) {
				byUID[pod.UID] = pod.Namespace
			}
		}
		for uid, g := range r.plan.Helped() {
			if ns, ok := byUID[uid]; ok {
				v.awaits[uid] = awaited{namespace: ns, group: g}
			}
		}
	}
	for _, g := range r.groups {
		if g.Upcoming > 0 {
			v.adding[g.ID] = g.Upcoming
		}
	}
	old := p.capacity.Swap(v)
	if hook := p.onCapacity.Load(); hook != nil {
		if changed := changedNamespaces(old, v); len(changed) > 0 {
			(*hook)(changed)
		}
	}
}

// changedNamespaces lists the namespaces with a pod whose awaited group
// differs between two views.
func changedNamespaces(old, cur *capacityView) []string {
	set := map[string]bool{}
	if old == nil {
		old = &capacityView{}
	}
	for uid, a := range cur.awaits {
		if old.awaits[uid] != a {
			set[a.namespace] = true
		}
	}
	for uid, a := range old.awaits {
		if _, ok := cur.awaits[uid]; !ok {
			set[a.namespace] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// OnCapacityChange sets the function told the namespaces whose pods started
// or stopped waiting for a node group. Safe to call while the loop runs.
func (l *NodeLoop) OnCapacityChange(fn func(namespaces []string)) { l.publisher.onCapacity.Store(&fn) }

// CapacityFor tells the pod loop how many of a workload's pods wait for a
// node and what the node loop does about it. A pod waits when the scheduler
// found no node for it, or when the node loop planned a node for it. Safe to
// call from any goroutine.
func (l *NodeLoop) CapacityFor(_ string, pods []*corev1.Pod) (int32, string) {
	v := l.publisher.capacity.Load()
	if v == nil {
		v = &capacityView{}
	}
	c := podCounts{perGroup: map[string]int{}}
	for _, p := range pods {
		a, planned := v.awaits[p.UID]
		switch {
		case p.Spec.NodeName != "" || p.DeletionTimestamp != nil:
			continue
		case planned:
			c.perGroup[a.group]++
		case !IsUnschedulable(p):
			continue
		case !p.CreationTimestamp.Time.Before(v.at):
			c.unjudged++
		default:
			c.unplanned++
		}
		c.waiting++
	}
	if c.waiting == 0 {
		return 0, ""
	}
	return int32(c.waiting), c.message(v)
}

// podCounts counts a workload's pods that wait for nodes: per node group
// planned for them, not judged by the node loop yet, with no node coming.
type podCounts struct {
	waiting, unjudged, unplanned int
	perGroup                     map[string]int
}

// message says, for instance, "3 replica(s) wait for nodes: 3 for
// node group web-pool (adding 2 node(s))".
func (c podCounts) message(v *capacityView) string {
	var parts []string
	for _, g := range slices.Sorted(maps.Keys(c.perGroup)) {
		parts = append(parts, fmt.Sprintf("%d for node group %s (adding %d node(s))", c.perGroup[g], g, v.adding[g]))
	}
	if c.unjudged > 0 {
		parts = append(parts, fmt.Sprintf("%d the node loop is looking at", c.unjudged))
	}
	if c.unplanned > 0 {
		why := "no node group can run them now, see the tidal-status ConfigMap"
		if v.stalled != "" {
			why = v.stalled
		}
		parts = append(parts, fmt.Sprintf("%d with no node coming (%s)", c.unplanned, why))
	}
	return fmt.Sprintf("%d replica(s) wait for nodes: %s", c.waiting, strings.Join(parts, ", "))
}
