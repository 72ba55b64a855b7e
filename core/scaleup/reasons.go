package scaleup

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/estimator"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// reasons records, per pod group and node group, why the node group does
// not help the pods (one or more reasons, such as the scheduler's
// "Insufficient cpu" and "Insufficient memory"); the latest round wins.
type reasons struct {
	byGroup map[*simulator.PodGroup]map[string][]string
	// detail are the same reasons with their numbers, where a template
	// node lacked room ("Insufficient cpu (needs 3, free 1.5)"), for
	// explaining one pod; the counts keep the scheduler's words, as
	// Cluster Autoscaler's events do.
	detail map[*simulator.PodGroup]map[string][]string
}

func newReasons() *reasons {
	return &reasons{byGroup: map[*simulator.PodGroup]map[string][]string{}, detail: map[*simulator.PodGroup]map[string][]string{}}
}

func (r *reasons) set(g *simulator.PodGroup, nodeGroup string, why ...string) {
	setIn(r.byGroup, g, nodeGroup, why)
	if m := r.detail[g]; m != nil {
		delete(m, nodeGroup)
	}
}

func setIn(in map[*simulator.PodGroup]map[string][]string, g *simulator.PodGroup, nodeGroup string, why []string) {
	m := in[g]
	if m == nil {
		m = map[string][]string{}
		in[g] = m
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
			if short := est.Shortfalls[w.Check.Group]; len(short) > 0 {
				setIn(r.detail, w.Check.Group, nodeGroup, withNumbers(est.Rejected[w.Check.Group].Reasons(), short))
			}
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

// byNodeGroup is a copy of a pod group's reasons by node group, with
// their numbers where known.
func (r *reasons) byNodeGroup(g *simulator.PodGroup) map[string][]string {
	out := make(map[string][]string, len(r.byGroup[g]))
	for nodeGroup := range r.byGroup[g] {
		out[nodeGroup] = append([]string(nil), r.why(g, nodeGroup)...)
	}
	return out
}

// why is a node group's reasons for a pod group, with their numbers where
// known.
func (r *reasons) why(g *simulator.PodGroup, nodeGroup string) []string {
	if d := r.detail[g][nodeGroup]; d != nil {
		return d
	}
	return r.byGroup[g][nodeGroup]
}

// withNumbers replaces each of the scheduler's reasons that a shortfall
// gives the numbers of ("Insufficient cpu" by "Insufficient cpu (needs 3,
// free 1.5)"); the others stay.
func withNumbers(why, short []string) []string {
	out := make([]string, len(why))
	for i, reason := range why {
		out[i] = reason
		for _, s := range short {
			if strings.HasPrefix(s, reason+" (") {
				out[i] = s
			}
		}
	}
	return out
}

// rejected merges, over the pod groups of work with a pod among pods, why
// each node group could not help them (with the numbers where known).
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
		for nodeGroup := range r.byGroup[w.Check.Group] {
			for _, reason := range r.why(w.Check.Group, nodeGroup) {
				if !slices.Contains(out[nodeGroup], reason) {
					out[nodeGroup] = append(out[nodeGroup], reason)
				}
			}
		}
	}
	return out
}
