package telemetry

import (
	"time"

	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestStatusEventsBeforeTheConfigMapExistAreSentOnceItDoes: the first
// iteration's events (its scale-up) come before the status ConfigMap is
// first written; they are kept and sent after, once.
func TestStatusEventsBeforeTheConfigMapExistAreSentOnceItDoes(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	e := NewEvents(rec, clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), false, nil)
	s := &statusObject{}
	e.OnStatus(s, corev1.EventTypeNormal, "ScaledUpGroup", "scale-up: node group %s size %d -> %d", "a", 0, 3)
	e.SendEarlyStatusEvents(s)
	if n := len(rec.Events); n != 0 {
		t.Fatalf("%d events recorded before the ConfigMap exists, want 0", n)
	}
	s.cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "tidal-status", Namespace: "kube-system", UID: "u1"}}
	e.SendEarlyStatusEvents(s)
	e.SendEarlyStatusEvents(s)
	if n := len(rec.Events); n != 1 {
		t.Fatalf("%d events after the ConfigMap was written, want the kept one once", n)
	}
	if got, want := <-rec.Events, "Normal ScaledUpGroup scale-up: node group a size 0 -> 3"; got != want {
		t.Errorf("event %q, want %q", got, want)
	}
}

// statusObject is a status ConfigMap written or not.
type statusObject struct{ cm *corev1.ConfigMap }

func (s *statusObject) Object() *corev1.ConfigMap { return s.cm }
