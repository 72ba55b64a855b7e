package testenv

import (
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// PDBWatcher follows every pod of a namespace and, after each change,
// checks each guarded app's healthy pods (Ready, not being deleted) against
// its PDB's minimum. An app is checked once it first reached its minimum.
type PDBWatcher struct {
	mu         sync.Mutex
	pods       map[string]*corev1.Pod
	min        map[string]int
	armed      map[string]bool
	violations []string
	events     int
}

// NewPDBWatcher is a watcher fed by Observe.
func NewPDBWatcher() *PDBWatcher {
	return &PDBWatcher{pods: map[string]*corev1.Pod{}, min: map[string]int{}, armed: map[string]bool{}}
}

// WatchPDBs is a watcher fed by the pods of ns from the test's client,
// until the test ends.
func WatchPDBs(t *testing.T, cs kubernetes.Interface, ns string) *PDBWatcher {
	t.Helper()
	w := NewPDBWatcher()
	FollowPods(t, cs, ns, w.Observe)
	return w
}

// Guard checks the pods labelled app=app against a minimum of healthy pods.
func (w *PDBWatcher) Guard(app string, minHealthy int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.min[app], w.armed[app] = minHealthy, false
}

// Unguard stops checking app.
func (w *PDBWatcher) Unguard(app string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.min, app)
	delete(w.armed, app)
}

// Observe takes in one pod event.
func (w *PDBWatcher) Observe(ev watch.Event) {
	p, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events++
	if ev.Type == watch.Deleted {
		delete(w.pods, p.Name)
	} else {
		w.pods[p.Name] = p
	}
	for app, min := range w.min {
		healthy := 0
		for _, q := range w.pods {
			if q.Labels["app"] == app && q.DeletionTimestamp == nil && PodReady(q) {
				healthy++
			}
		}
		switch {
		case healthy >= min:
			w.armed[app] = true
		case w.armed[app]:
			w.violations = append(w.violations, fmt.Sprintf("%s: %d healthy, PDB minimum %d (after %s of %s on %s)",
				app, healthy, min, ev.Type, p.Name, p.Spec.NodeName))
		}
	}
}

// Result is the violations seen and the pod events observed.
func (w *PDBWatcher) Result() (violations []string, events int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.violations...), w.events
}

// PodReady reports whether the pod's Ready condition is true.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
