package integration

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// nominationHistory records, from a watch of a namespace's pods, each
// pod's nominated nodes while it is pending (repeats dropped) and the node
// it is bound to: whether the scheduler bound a pod elsewhere than tidal
// nominated it while tidal's nomination stood (a plan that does not fit),
// or after it had cleared it (which the scheduler does each time it tries a
// pod whose node still starts, and tidal cannot prevent).
type nominationHistory struct {
	mu       sync.Mutex
	seen     map[string][]string
	bound    map[string]string
	complete bool
}

// watchNominations starts recording ns's pods until the test ends.
func watchNominations(t *testing.T, ns string) *nominationHistory {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := cluster(t).Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch the pods of %s: %v", ns, err)
	}
	h := &nominationHistory{seen: map[string][]string{}, bound: map[string]string{}, complete: true}
	go h.record(ctx, w)
	return h
}

// record reads the watch until ctx ends; a watch that ends or fails first
// leaves the history incomplete.
func (h *nominationHistory) record(ctx context.Context, w watch.Interface) {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			p, isPod := ev.Object.(*corev1.Pod)
			if !ok || !isPod {
				h.mu.Lock()
				h.complete = false
				h.mu.Unlock()
				return
			}
			h.add(p)
		}
	}
}

func (h *nominationHistory) add(p *corev1.Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, done := h.bound[p.Name]; done {
		return
	}
	if p.Spec.NodeName != "" {
		h.bound[p.Name] = p.Spec.NodeName
		return
	}
	s := h.seen[p.Name]
	if len(s) == 0 || s[len(s)-1] != p.Status.NominatedNodeName {
		h.seen[p.Name] = append(s, p.Status.NominatedNodeName)
	}
}

// clearedBeforeBinding tells whether the pod, bound to node, had no
// nomination when the scheduler placed it: the last nomination it carried
// while pending, other than node itself (the scheduler may name the node it
// binds to), was cleared. An incomplete history tells nothing.
func (h *nominationHistory) clearedBeforeBinding(pod, node string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.complete {
		return false
	}
	s := slices.Clone(h.seen[pod])
	for len(s) > 0 && s[len(s)-1] == node {
		s = s[:len(s)-1]
	}
	return len(s) > 0 && s[len(s)-1] == ""
}

// String shows the history, for a failure.
func (h *nominationHistory) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	for _, pod := range slices.Sorted(maps.Keys(h.seen)) {
		fmt.Fprintf(&b, "\n%s: nominated %q while pending, bound to %q", pod, h.seen[pod], h.bound[pod])
	}
	return b.String()
}
