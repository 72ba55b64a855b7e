package hpa

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Recommendation is one stored, unstabilized replica recommendation.
type Recommendation struct {
	Replicas  int32       `json:"replicas"`
	Timestamp metav1.Time `json:"timestamp"`
}

// ScaleEvent is one stored rescale: the absolute replica change and when it
// happened. Outdated marks an entry older than the longest policy period of
// its direction at the time of the last store; such an entry may be reused.
type ScaleEvent struct {
	ReplicaChange int32       `json:"replicaChange"`
	Timestamp     metav1.Time `json:"timestamp"`
	Outdated      bool        `json:"outdated,omitempty"`
}

// History is the per-autoscaler memory that Kubernetes keeps in process and
// tidal persists in the autoscaler's status. Functions in this package never
// modify a History they are given; they return an updated copy.
//
// metav1.Time serialises whole seconds, so entries are stamped with now
// rounded up to the second (stamp): what is read back equals what was
// computed with, and a rounded stamp can only make a policy period or a
// stabilization window last longer, never let a rescale come early.
type History struct {
	// Recommendations are the recent unstabilized recommendations.
	Recommendations []Recommendation `json:"recommendations,omitempty"`
	// ScaleUpEvents and ScaleDownEvents are the recent rescales, recorded
	// only for autoscalers with a behavior.
	ScaleUpEvents   []ScaleEvent `json:"scaleUpEvents,omitempty"`
	ScaleDownEvents []ScaleEvent `json:"scaleDownEvents,omitempty"`
}

// stamp is now rounded up to a whole second.
func stamp(now time.Time) metav1.Time {
	t := now.Truncate(time.Second)
	if t.Before(now) {
		t = t.Add(time.Second)
	}
	return metav1.NewTime(t)
}

// madeAt is when an entry was made, as windows and periods measure it: its
// stamp, but never later than just before now. A stamp is rounded up, so
// the entry of this very sync (the seed of a new autoscaler) or of a sync
// less than a second ago can carry a time after now; it was made before
// now, and counts as made just before it. So a 0 s window leaves it out, as
// Kubernetes' leaves out even the recommendation it seeded at the start of
// the same sync, while any longer window or period holds it.
func madeAt(ts metav1.Time, now time.Time) time.Time {
	if ts.Time.Before(now) {
		return ts.Time
	}
	return now.Add(-time.Nanosecond)
}

// DeepCopyInto copies h into out.
func (h *History) DeepCopyInto(out *History) {
	out.Recommendations = append([]Recommendation(nil), h.Recommendations...)
	out.ScaleUpEvents = append([]ScaleEvent(nil), h.ScaleUpEvents...)
	out.ScaleDownEvents = append([]ScaleEvent(nil), h.ScaleDownEvents...)
}

// DeepCopy returns a copy of h.
func (h *History) DeepCopy() *History {
	if h == nil {
		return nil
	}
	out := new(History)
	h.DeepCopyInto(out)
	return out
}

// SeedRecommendation returns h with the recommendation {current, now} when it
// has none, as Kubernetes does on the first sync of an autoscaler. This is
// why a new (or, upstream, restarted) autoscaler does not scale down within
// its first scale-down window.
func SeedRecommendation(h History, current int32, now time.Time) History {
	if len(h.Recommendations) == 0 {
		h.Recommendations = []Recommendation{{Replicas: current, Timestamp: stamp(now)}}
	}
	return h
}

// storeRecommendation returns recs with rec written over index old, or
// appended when old < 0, leaving recs untouched.
func storeRecommendation(recs []Recommendation, old int, rec Recommendation) []Recommendation {
	out := make([]Recommendation, len(recs), len(recs)+1)
	copy(out, recs)
	if old >= 0 {
		out[old] = rec
		return out
	}
	return append(out, rec)
}
