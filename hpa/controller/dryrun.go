package controller

import "sync"

// dryRunWanted remembers, in shadow mode, the replica count each
// autoscaler last wanted, so that a rescale that stands sync after sync
// (nothing writes it) is recorded once.
type dryRunWanted struct {
	mu   sync.Mutex
	last map[string]int32
}

// changed records desired for key and reports whether it differs from
// what key last wanted.
func (w *dryRunWanted) changed(key string, desired int32) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	last, ok := w.last[key]
	w.last[key] = desired
	return !ok || last != desired
}

// forget drops a deleted autoscaler.
func (w *dryRunWanted) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.last, key)
}
