package scaleup

import (
	"cmp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/simulator"
)

// PodScaleUpDelayAnnotation overrides --new-pod-scale-up-delay for a pod,
// as in Cluster Autoscaler.
const PodScaleUpDelayAnnotation = "cluster-autoscaler.kubernetes.io/pod-scale-up-delay"

// Selection are the options of SelectPending.
type Selection struct {
	// PriorityCutoff is --expendable-pods-priority-cutoff: pods of lower
	// priority never trigger a scale-up.
	PriorityCutoff int32
	// NewPodDelay is --new-pod-scale-up-delay: younger pods wait, unless
	// their PodScaleUpDelayAnnotation says otherwise.
	NewPodDelay time.Duration
}

// Selected is what SelectPending kept and why it dropped the rest.
type Selected struct {
	// Pods may trigger a scale-up, most important first.
	Pods []*corev1.Pod
	// Expendable and Young count the pods below the priority cutoff and
	// those younger than their scale-up delay.
	Expendable, Young int
	// Unsupported are the pods the simulation cannot judge (they use
	// dynamic resource claims).
	Unsupported []*corev1.Pod
}

// SelectPending picks, at now, the pending pods that may trigger a
// scale-up, pictured ones (provisioned ahead, headroom) included: not
// expendable, old enough, and without dynamic resource claims. They are
// sorted by priority (highest first), then age (oldest first), then
// namespace and name.
func SelectPending(pending []*corev1.Pod, now time.Time, s Selection) Selected {
	out := selectPending(pending, now, s)
	sortPending(out.Pods)
	return out
}

// selectPending is SelectPending but for the order: the pods kept are in
// pending's.
func selectPending(pending []*corev1.Pod, now time.Time, s Selection) Selected {
	var out Selected
	for _, p := range pending {
		switch {
		case PodPriority(p) < s.PriorityCutoff:
			out.Expendable++
		case now.Sub(p.CreationTimestamp.Time) < ScaleUpDelay(p, s.NewPodDelay):
			out.Young++
		case len(p.Spec.ResourceClaims) > 0:
			out.Unsupported = append(out.Unsupported, p)
		default:
			out.Pods = append(out.Pods, p)
		}
	}
	return out
}

// pendingKey is what sortPending orders a pod by, read once per pod: the
// comparisons then read no pod object.
type pendingKey struct {
	prio     int32
	nsec     int32
	sec      int64
	ns, name string
	pod      *corev1.Pod
}

// sortPending sorts pods by priority (highest first), then creation time
// (oldest first), then namespace and name: an order of the pods alone, not
// of the order they come in.
func sortPending(pods []*corev1.Pod) {
	keys := make([]pendingKey, len(pods))
	for i, p := range pods {
		keys[i] = keyOf(p)
	}
	slices.SortFunc(keys, comparePending)
	for i := range keys {
		pods[i] = keys[i].pod
	}
}

// keyOf is p's pendingKey.
func keyOf(p *corev1.Pod) pendingKey {
	t := p.CreationTimestamp.Time
	return pendingKey{prio: PodPriority(p), sec: t.Unix(), nsec: int32(t.Nanosecond()), ns: p.Namespace, name: p.Name, pod: p}
}

// comparePending is the pending pods' order (see sortPending).
func comparePending(a, b pendingKey) int {
	if a.prio != b.prio {
		return cmp.Compare(b.prio, a.prio)
	}
	if a.sec != b.sec {
		return cmp.Compare(a.sec, b.sec)
	}
	return cmp.Or(cmp.Compare(a.nsec, b.nsec), cmp.Compare(a.ns, b.ns), cmp.Compare(a.name, b.name))
}

// pendingBefore tells whether a comes before b in the pending pods' order.
func pendingBefore(a, b *corev1.Pod) bool { return comparePending(keyOf(a), keyOf(b)) < 0 }

// Seen reports whether the decision at now sees a real pod as itself: on a
// node, nominated to one, or pending and old enough for SelectPending
// (delay is --new-pod-scale-up-delay). A pod of a provisioned-ahead
// workload takes the place of its pictured replica only once seen; a
// younger pending pod is left out of the decision, so its replica stays
// pictured and the capacity asked for it does not lapse for a while.
func Seen(p *corev1.Pod, now time.Time, delay time.Duration) bool {
	if p.Spec.NodeName != "" || p.Status.NominatedNodeName != "" {
		return true
	}
	return now.Sub(p.CreationTimestamp.Time) >= ScaleUpDelay(p, delay)
}

// PodPriority is the pod's priority, 0 when unset.
func PodPriority(p *corev1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// ScaleUpDelay is how old a pending pod must be before it may trigger a
// scale-up: its PodScaleUpDelayAnnotation, or def when the pod has none or
// a malformed one.
func ScaleUpDelay(p *corev1.Pod, def time.Duration) time.Duration {
	if v, ok := p.Annotations[PodScaleUpDelayAnnotation]; ok {
		if d, err := time.ParseDuration(v); err == nil && d >= 0 {
			return d
		}
	}
	return def
}

// OrderGroups is fairness across workloads: among pod groups of equal
// priority, those whose keys are in unfinished (left by the last decision
// for lack of time) come first, so every workload makes progress across
// iterations. Otherwise the order stays.
func OrderGroups(groups []*simulator.PodGroup, unfinished map[string]bool) []*simulator.PodGroup {
	if len(unfinished) == 0 {
		return groups
	}
	out := slices.Clone(groups)
	slices.SortStableFunc(out, func(a, b *simulator.PodGroup) int {
		if c := cmp.Compare(PodPriority(b.Representative()), PodPriority(a.Representative())); c != 0 {
			return c
		}
		ua, ub := unfinished[a.Key], unfinished[b.Key]
		switch {
		case ua && !ub:
			return -1
		case ub && !ua:
			return 1
		}
		return 0
	})
	return out
}

// UnfinishedKeys are the keys of the plan's unfinished pod groups, for
// OrderGroups in the next decision.
func (p *Plan) UnfinishedKeys() map[string]bool {
	out := make(map[string]bool, len(p.Unfinished))
	for _, g := range p.Unfinished {
		out[g.Key] = true
	}
	return out
}
