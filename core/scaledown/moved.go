package scaledown

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Eviction is one pod a drain evicted, by its controller.
type Eviction struct {
	// Controller is the UID of the evicted pod's controller (a ReplicaSet,
	// a StatefulSet...).
	Controller types.UID
	At         time.Time
}

// EvictedSince maps controllers to the first of their pods' evictions at or
// after since: the evictions of the scale-down under way (see Settled).
func EvictedSince(evictions []Eviction, since time.Time) map[types.UID]time.Time {
	out := map[types.UID]time.Time{}
	for _, e := range evictions {
		if e.At.Before(since) {
			continue
		}
		if t, ok := out[e.Controller]; !ok || e.At.Before(t) {
			out[e.Controller] = e.At
		}
	}
	return out
}

// Moved reports whether p is a pod a drain moved: its controller had a pod
// evicted (evicted, as EvictedSince returns) and p was created since, so p is,
// or may be, the evicted pod's replacement. Creation times are stored to
// the second, so the eviction's time is taken to the second too: a sibling
// created in that same second counts as moved, which only holds its node
// a while.
func Moved(p *corev1.Pod, evicted map[types.UID]time.Time) bool {
	if len(evicted) == 0 {
		return false
	}
	ref := metav1.GetControllerOfNoCopy(p)
	if ref == nil {
		return false
	}
	t, ok := evicted[ref.UID]
	return ok && !p.CreationTimestamp.Time.Before(t.Truncate(time.Second))
}

// Placing counts the pending pods a drain moved: the replacements of
// evicted pods the scheduler has not bound yet.
func Placing(pending []*corev1.Pod, evicted map[types.UID]time.Time) int {
	n := 0
	for _, p := range pending {
		if p.Spec.NodeName == "" && Moved(p, evicted) {
			n++
		}
	}
	return n
}

// Settled reports whether the scale-down under way is over, so that the
// pods it moved may be moved again by a later one: no drain is under way
// (drains) or starting (d), no moved pod waits for a node (in.Placing),
// and no node with pods to move waits for its unneeded time or a
// cooldown to start. A node due but held back by a budget (parallelism,
// disruptions, the cluster's minimum) does not keep it going: it may wait
// for ever.
func Settled(in RemovalInput, d RemovalDecision, drains int) bool {
	if drains > 0 || in.Placing > 0 {
		return false
	}
	for _, r := range d.Start {
		if len(r.Evict) > 0 {
			return false
		}
	}
	for _, u := range in.Plan.Unneeded {
		due, ok := in.due(u)
		if ok && !u.Empty() && (due.After(in.Now) || d.Waiting != "") {
			return false
		}
	}
	return true
}
