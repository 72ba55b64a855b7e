package scaleup

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/estimator"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// reasons records, per pod group and node group, why the node group does
// not help the pods (one or more reasons, such as the scheduler's
// "Insufficient cpu" and "Insufficient memory"); the latest round wins.
type reasons struct {
	byGroup map[*simulator.PodGroup]map[string][]string
}

func newReasons() *reasons { return &reasons{byGroup: map[*simulator.PodGroup]map[string][]string{}} }

func (r *reasons) set(g *simulator.PodGroup, nodeGroup string, why ...string) {
	m := r.byGroup[g]
	if m == nil {
		m = map[string][]string{}
		r.byGroup[g] = m
	}
	m[nodeGroup] = why
}

func (r *reasons) all(work []estimator.Work, nodeGroup, reason string) {
	for _, w := range work {
		r.set(w.Check.Group, nodeGroup, reason)
	}
}

// fromEstimate records why pods of work were left out of est: rejected by
// the scheduler on an empty template node, stopped by the limit (limitWhy),
// or by the deadline.
func (r *reasons) fromEstimate(work []estimator.Work, nodeGroup string, est *estimator.Estimate, limitWhy string) {
	helped := map[*simulator.PodGroup]int{}
	in := map[string]bool{}
	for _, p := range est.Pods {
		in[podKey(p)] = true
	}
	for _, w := range work {
		for _, p := range w.Pods {
			if in[podKey(p)] {
				helped[w.Check.Group]++
			}
		}
		switch {
		case est.Rejected[w.Check.Group] != nil:
			r.set(w.Check.Group, nodeGroup, est.Rejected[w.Check.Group].Reasons()...)
		case helped[w.Check.Group] == len(w.Pods):
			delete(r.byGroup[w.Check.Group], nodeGroup)
		case est.TimedOut:
			r.set(w.Check.Group, nodeGroup, ReasonTimedOut)
		default:
			r.set(w.Check.Group, nodeGroup, limitWhy)
		}
	}
}

// of counts a pod group's reasons over node groups, each reason apart, as
// Cluster Autoscaler counts them: two groups too small in cpu, one of them
// in memory too, is 2 "Insufficient cpu" and 1 "Insufficient memory".
func (r *reasons) of(g *simulator.PodGroup) map[string]int {
	out := map[string]int{}
	for _, why := range r.byGroup[g] {
		for _, reason := range why {
			out[reason]++
		}
	}
	return out
}

// byNodeGroup is a copy of a pod group's reasons by node group.
func (r *reasons) byNodeGroup(g *simulator.PodGroup) map[string][]string {
	out := make(map[string][]string, len(r.byGroup[g]))
	for nodeGroup, why := range r.byGroup[g] {
		out[nodeGroup] = append([]string(nil), why...)
	}
	return out
}

// rejected merges, over the pod groups of work with a pod among pods, why
// each node group could not help them.
func (r *reasons) rejected(work []estimator.Work, pods []*corev1.Pod) map[string][]string {
	in := make(map[string]bool, len(pods))
	for _, p := range pods {
		in[podKey(p)] = true
	}
	out := map[string][]string{}
	for _, w := range work {
		if !slices.ContainsFunc(w.Pods, func(p *corev1.Pod) bool { return in[podKey(p)] }) {
			continue
		}
		for nodeGroup, why := range r.byGroup[w.Check.Group] {
			for _, reason := range why {
				if !slices.Contains(out[nodeGroup], reason) {
					out[nodeGroup] = append(out[nodeGroup], reason)
				}
			}
		}
	}
	return out
}
