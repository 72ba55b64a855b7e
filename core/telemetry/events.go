// Package telemetry is what the node loop and its actuator tell: events
// (deduplicated as Cluster Autoscaler does) and Prometheus metrics. It
// decides nothing and imports no other part of the loop.
package telemetry

import (
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// eventDedupWindow is how long an identical event on the same object is
// not repeated, as Cluster Autoscaler does without
// --record-duplicated-events.
const eventDedupWindow = 5 * time.Minute

// Events records events, dropping repeats of the same reason and
// message on the same object within the window.
type Events struct {
	recorder record.EventRecorder
	clock    clock.Clock
	all      bool
	// imagined tells pods that exist only in the loop's mind.
	imagined func(*corev1.Pod) bool

	mu   sync.Mutex
	last map[string]time.Time
	// early are status events recorded before the status ConfigMap was
	// first written (the first iteration's), sent once it is.
	early []statusEvent
}

// StatusObject is the status ConfigMap as last written (nil: not yet).
type StatusObject interface{ Object() *corev1.ConfigMap }

// statusEvent is an event kept for the status ConfigMap.
type statusEvent struct{ eventType, reason, msg string }

// maxEarlyStatusEvents bounds the events kept for a status ConfigMap that
// may never be written (--write-status-configmap=false).
const maxEarlyStatusEvents = 100

// NewEvents records events with r; recordDuplicates keeps repeats
// (--record-duplicated-events). The pods imagined reports (ones only the
// loop pictures, not objects of the API server) get none.
func NewEvents(r record.EventRecorder, c clock.Clock, recordDuplicates bool, imagined func(*corev1.Pod) bool) *Events {
	return &Events{recorder: r, clock: c, all: recordDuplicates, imagined: imagined, last: map[string]time.Time{}}
}

func (e *Events) record(obj runtime.Object, uid, eventType, reason, format string, args ...any) {
	if e.recorder == nil {
		return
	}
	msg := fmt.Sprintf(format, args...)
	now := e.clock.Now()
	key := uid + "\x00" + reason + "\x00" + msg
	e.mu.Lock()
	if t, ok := e.last[key]; ok && !e.all && now.Sub(t) < eventDedupWindow {
		e.mu.Unlock()
		return
	}
	e.last[key] = now
	if len(e.last) > 50000 {
		for k, t := range e.last {
			if now.Sub(t) >= eventDedupWindow {
				delete(e.last, k)
			}
		}
	}
	e.mu.Unlock()
	e.recorder.Event(obj, eventType, reason, msg)
}

// OnPod records an event on a pod.
func (e *Events) OnPod(p *corev1.Pod, eventType, reason, format string, args ...any) {
	if e.imagined != nil && e.imagined(p) {
		// Not an object of the API server: the loop tells the pod's source
		// (see tellPods).
		return
	}
	e.record(p, string(p.UID), eventType, reason, format, args...)
}

// OnRef records an event on any object.
func (e *Events) OnRef(ref *corev1.ObjectReference, eventType, reason, format string, args ...any) {
	e.record(ref, string(ref.UID)+ref.Kind+ref.Namespace+ref.Name, eventType, reason, format, args...)
}

func (e *Events) OnNode(n *corev1.Node, eventType, reason, format string, args ...any) {
	e.record(n, string(n.UID), eventType, reason, format, args...)
}

func (e *Events) OnConfigMap(cm *corev1.ConfigMap, eventType, reason, format string, args ...any) {
	e.record(cm, string(cm.UID), eventType, reason, format, args...)
}

// OnStatus records an event on the status ConfigMap, or keeps it until
// the ConfigMap exists (sendEarlyStatusEvents).
func (e *Events) OnStatus(s StatusObject, eventType, reason, format string, args ...any) {
	if cm := s.Object(); cm != nil {
		e.OnConfigMap(cm, eventType, reason, format, args...)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.early) < maxEarlyStatusEvents {
		e.early = append(e.early, statusEvent{eventType, reason, fmt.Sprintf(format, args...)})
	}
}

// SendEarlyStatusEvents records the events kept for want of the status
// ConfigMap, once it has been written.
func (e *Events) SendEarlyStatusEvents(s StatusObject) {
	cm := s.Object()
	if cm == nil {
		return
	}
	e.mu.Lock()
	early := e.early
	e.early = nil
	e.mu.Unlock()
	for _, ev := range early {
		e.OnConfigMap(cm, ev.eventType, ev.reason, "%s", ev.msg)
	}
}

// OnObject records an event on any object the API server holds, uid
// telling objects apart.
func (e *Events) OnObject(obj runtime.Object, uid, eventType, reason, format string, args ...any) {
	e.record(obj, uid, eventType, reason, format, args...)
}
