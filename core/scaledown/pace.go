package scaledown

import (
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Pacing paces a drain's evictions so that the pods it moves find room at
// once: a drain evicts its next pod only while fewer than Limit evicted
// pods wait for their replacement to be bound to a node
// (--max-pending-evicted-pods, --pending-evicted-pods-timeout).
type Pacing struct {
	// Limit is how many evicted pods may wait for a node at once; 0 or
	// less: no pacing, a drain evicts all its pods at once.
	Limit int
	// Timeout is how long an evicted pod counts as waiting for a node
	// at most, and how long a drain waits for its next eviction before
	// it is abandoned.
	Timeout time.Duration
}

// PaceStep is what a drain does with its next eviction.
type PaceStep int

const (
	// PaceEvict evicts the next pod now.
	PaceEvict PaceStep = iota
	// PaceWait waits for an evicted pod's replacement to be bound.
	PaceWait
	// PaceGiveUp abandons the drain: it waited Timeout.
	PaceGiveUp
)

// Next says whether a drain evicts its next pod now: waiting are the
// evicted pods whose replacement is not bound yet (Unplaced) plus the
// evictions asked for and not yet answered, waited how long the drain has
// waited for this eviction.
func (p Pacing) Next(waiting int, waited time.Duration) PaceStep {
	switch {
	case p.Limit <= 0 || waiting < p.Limit:
		return PaceEvict
	case waited >= p.Timeout:
		return PaceGiveUp
	default:
		return PaceWait
	}
}

// ReplacementGrace is how long an evicted pod whose controller has made no
// new pod since counts as waiting for a node: a controller creates the
// replacement within seconds, and one that has not by then (it was scaled
// down, or deleted) will not, so its eviction holds no drain back.
const ReplacementGrace = 10 * time.Second

// Unplaced counts the evictions at or after since whose replacement is not
// bound to a node yet: a pod of the controller created since its first
// eviction (to the second, as creation times are stored) that waits for a
// node, or none yet within ReplacementGrace of the eviction before now. A
// controller's new pods are taken by its evictions oldest first, the bound
// ones before those waiting; evictions is every eviction remembered, so an
// older eviction takes its replacement before since drops it.
func Unplaced(evictions []Eviction, pods []*corev1.Pod, since, now time.Time) int {
	times := map[types.UID][]time.Time{}
	for _, e := range evictions {
		times[e.Controller] = append(times[e.Controller], e.At)
	}
	for _, ts := range times {
		slices.SortFunc(ts, time.Time.Compare)
	}
	bound, waiting := map[types.UID]int{}, map[types.UID]int{}
	for _, p := range pods {
		ref := metav1.GetControllerOfNoCopy(p)
		if ref == nil || p.DeletionTimestamp != nil || len(times[ref.UID]) == 0 ||
			p.CreationTimestamp.Time.Before(times[ref.UID][0].Truncate(time.Second)) {
			continue
		}
		if p.Spec.NodeName != "" {
			bound[ref.UID]++
		} else {
			waiting[ref.UID]++
		}
	}
	n := 0
	for uid, ts := range times {
		for i, at := range ts[min(bound[uid], len(ts)):] {
			hasReplacement := i < waiting[uid]
			if !at.Before(since) && (hasReplacement || now.Sub(at) < ReplacementGrace) {
				n++
			}
		}
	}
	return n
}
