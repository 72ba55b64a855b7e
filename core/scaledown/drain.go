package scaledown

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// PodEvictionHeadroom is added to --max-graceful-termination-sec before a
// drain stops waiting for an evicted pod: the kubelet needs a moment after
// the grace period to stop the pod and report it, as Cluster Autoscaler
// allows.
const PodEvictionHeadroom = 30 * time.Second

// Presence is what is known of a pod a drain waits for.
type Presence int

const (
	// PresenceUnknown: nothing sound can be said (the cache is not synced,
	// the API failed). An unknown pod is waited for, never taken as gone.
	PresenceUnknown Presence = iota
	// PresenceHere: the pod still exists.
	PresenceHere
	// PresenceGone: the pod was deleted, or its name now belongs to
	// another pod.
	PresenceGone
)

func (p Presence) String() string {
	switch p {
	case PresenceHere:
		return "here"
	case PresenceGone:
		return "gone"
	}
	return "unknown"
}

// FromCache judges an evicted pod by the pod informer's cache: cached is
// the pod of that name there, or nil. A cache is never ahead of the API, so
// the name held by another UID means the pod is gone. A pod the cache lacks
// is not known gone (the cache may be behind, or between a relist and its
// replay): confirm tells the caller to ask the API.
func FromCache(uid types.UID, cached *corev1.Pod, synced bool) (p Presence, confirm bool) {
	switch {
	case !synced:
		return PresenceUnknown, false
	case cached == nil:
		return PresenceUnknown, true
	case cached.UID != uid:
		return PresenceGone, false
	}
	return PresenceHere, false
}

// FromAPI judges an evicted pod by a GET of its name. It is gone only when
// the API says NotFound or the name belongs to another UID; any other error
// (a 5xx, a 429, a timeout) says nothing.
func FromAPI(uid types.UID, got *corev1.Pod, err error) Presence {
	switch {
	case apierrors.IsNotFound(err):
		return PresenceGone
	case err != nil || got == nil:
		return PresenceUnknown
	case got.UID != uid:
		return PresenceGone
	}
	return PresenceHere
}

// Evicted is a pod a drain evicted, and when the API server accepted it.
type Evicted struct {
	Pod *corev1.Pod
	At  time.Time
}

// Overdue splits the pods a drain still waits for into those within their
// time and those evicted longer than maxGrace plus PodEvictionHeadroom ago:
// their kubelet has had the longest grace period tidal gives, so a node
// whose every remaining pod is overdue may go.
func Overdue(left []Evicted, now time.Time, maxGrace time.Duration) (waiting, overdue []Evicted) {
	for _, e := range left {
		if now.Sub(e.At) >= maxGrace+PodEvictionHeadroom {
			overdue = append(overdue, e)
		} else {
			waiting = append(waiting, e)
		}
	}
	return waiting, overdue
}

// Unexpected returns the pods on a node that its removal did not plan for:
// pods a drain would have to move, or that would keep the node, which are
// not among planned (matched by UID). Mirror, DaemonSet, finished and
// long-terminating pods are expected on any node. A removal that finds one
// (a pod bound between the plan and the taint) must be abandoned.
func Unexpected(onNode, planned []*corev1.Pod, now time.Time) []*corev1.Pod {
	known := make(map[types.UID]bool, len(planned))
	for _, p := range planned {
		known[p.UID] = true
	}
	var out []*corev1.Pod
	for _, p := range onNode {
		if _, stays := leftBehind(p, now); !stays && !known[p.UID] {
			out = append(out, p)
		}
	}
	return out
}
