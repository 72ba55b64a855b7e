package core

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

// eventDeduper records events, dropping repeats of the same reason and
// message on the same object within the window.
type eventDeduper struct {
	recorder record.EventRecorder
	clock    clock.Clock
	all      bool

	mu   sync.Mutex
	last map[string]time.Time
	// early are status events recorded before the status ConfigMap was
	// first written (the first iteration's), sent once it is.
	early []statusEvent
}

// statusEvent is an event kept for the status ConfigMap.
type statusEvent struct{ eventType, reason, msg string }

// maxEarlyStatusEvents bounds the events kept for a status ConfigMap that
// may never be written (--write-status-configmap=false).
const maxEarlyStatusEvents = 100

func newEventDeduper(r record.EventRecorder, c clock.Clock, recordDuplicates bool) *eventDeduper {
	return &eventDeduper{recorder: r, clock: c, all: recordDuplicates, last: map[string]time.Time{}}
}

func (e *eventDeduper) record(obj runtime.Object, uid, eventType, reason, format string, args ...any) {
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

func (e *eventDeduper) onPod(p *corev1.Pod, eventType, reason, format string, args ...any) {
	if pictured(p) {
		// Not an object of the API server: the loop tells the pod's source
		// (see tellPods).
		return
	}
	e.record(p, string(p.UID), eventType, reason, format, args...)
}

// onRef records an event on any object.
func (e *eventDeduper) onRef(ref *corev1.ObjectReference, eventType, reason, format string, args ...any) {
	e.record(ref, string(ref.UID)+ref.Kind+ref.Namespace+ref.Name, eventType, reason, format, args...)
}

func (e *eventDeduper) onNode(n *corev1.Node, eventType, reason, format string, args ...any) {
	e.record(n, string(n.UID), eventType, reason, format, args...)
}

func (e *eventDeduper) onConfigMap(cm *corev1.ConfigMap, eventType, reason, format string, args ...any) {
	e.record(cm, string(cm.UID), eventType, reason, format, args...)
}

// onStatus records an event on the status ConfigMap, or keeps it until
// the ConfigMap exists (sendEarlyStatusEvents).
func (e *eventDeduper) onStatus(s *statusWriter, eventType, reason, format string, args ...any) {
	if cm := s.object(); cm != nil {
		e.onConfigMap(cm, eventType, reason, format, args...)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.early) < maxEarlyStatusEvents {
		e.early = append(e.early, statusEvent{eventType, reason, fmt.Sprintf(format, args...)})
	}
}

// sendEarlyStatusEvents records the events kept for want of the status
// ConfigMap, once it has been written.
func (e *eventDeduper) sendEarlyStatusEvents(s *statusWriter) {
	cm := s.object()
	if cm == nil {
		return
	}
	e.mu.Lock()
	early := e.early
	e.early = nil
	e.mu.Unlock()
	for _, ev := range early {
		e.onConfigMap(cm, ev.eventType, ev.reason, "%s", ev.msg)
	}
}
