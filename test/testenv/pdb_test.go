package testenv

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestPDBWatcherCatchesViolations checks the watcher itself: without it the
// tests that use it could pass by seeing nothing.
func TestPDBWatcherCatchesViolations(t *testing.T) {
	w := NewPDBWatcher()
	w.Guard("web", 2)
	pod := func(name string, ready bool) *corev1.Pod {
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}}}
	}
	w.Observe(watch.Event{Type: watch.Added, Object: pod("a", true)})
	if v, _ := w.Result(); len(v) != 0 {
		t.Fatal("an app still coming up counted as a violation")
	}
	w.Observe(watch.Event{Type: watch.Added, Object: pod("b", true)})
	w.Observe(watch.Event{Type: watch.Added, Object: pod("c", true)})
	w.Observe(watch.Event{Type: watch.Deleted, Object: pod("c", true)})
	if v, _ := w.Result(); len(v) != 0 {
		t.Fatalf("3 → 2 healthy with a minimum of 2 is no violation: %v", v)
	}
	w.Observe(watch.Event{Type: watch.Modified, Object: pod("b", false)})
	if v, events := w.Result(); len(v) != 1 || events != 5 {
		t.Fatalf("1 healthy with a minimum of 2 must be a violation, got %v after %d events", v, events)
	}
}
