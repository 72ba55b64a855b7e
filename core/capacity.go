package core

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// setComing publishes, after each iteration, the nodes each group is
// adding, for the pod loop (CapacityFor).
func (l *NodeLoop) setComing() {
	coming := map[string]int{}
	for _, g := range l.state.Groups() {
		if g.Upcoming > 0 {
			coming[g.ID] = g.Upcoming
		}
	}
	l.coming.Store(&coming)
}

// CapacityFor tells the pod loop how many of a workload's pods wait for a
// node (the scheduler found none) and which node groups are adding nodes.
// It is safe to call from any goroutine.
func (l *NodeLoop) CapacityFor(_ string, pods []*corev1.Pod) (int32, string) {
	waiting := int32(0)
	for _, p := range pods {
		if IsUnschedulable(p) {
			waiting++
		}
	}
	if waiting == 0 {
		return 0, ""
	}
	var parts []string
	if c := l.coming.Load(); c != nil {
		for id, n := range *c {
			parts = append(parts, fmt.Sprintf("node group %s is adding %d node(s)", id, n))
		}
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return waiting, fmt.Sprintf("%d replica(s) wait for capacity; no node group is growing for them (see the tidal-status ConfigMap)", waiting)
	}
	return waiting, fmt.Sprintf("%d replica(s) wait for capacity; %s", waiting, strings.Join(parts, ", "))
}
