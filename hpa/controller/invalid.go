package controller

import (
	"sync"

	"k8s.io/klog/v2"
)

// EventInvalidSpec is the reason of an autoscaler with a value tidal cannot
// read although the API server stored it (a duration out of bounds, a spec
// that does not decode): the autoscaler is not scaled, and every other one
// goes on.
const EventInvalidSpec = "InvalidSpec"

// invalidSpecs keeps which autoscalers have a spec tidal cannot use
// (Autoscaler.SpecErr), so that each is logged once per change of its
// message, not at every sync, and counted in the metric
// tidal_pod_autoscaler_invalid_specs{reason}.
type invalidSpecs struct {
	mu    sync.Mutex
	byKey map[string]invalidSpec
}

type invalidSpec struct{ reason, message string }

// report records that key's spec is invalid (reason, message), logging it
// when it is new or its message changed.
func (v *invalidSpecs) report(logger klog.Logger, o *Observer, key, reason, message string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.byKey[key] == (invalidSpec{reason, message}) {
		return
	}
	if v.byKey == nil {
		v.byKey = map[string]invalidSpec{}
	}
	v.byKey[key] = invalidSpec{reason, message}
	logger.Info("Pod autoscaler has a spec tidal cannot use; it is not scaled until corrected", "reason", reason, "err", message)
	o.invalidSpecs(v.counts())
}

// forget records that key's spec is valid, or that key is gone.
func (v *invalidSpecs) forget(o *Observer, key string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.byKey[key]; !ok {
		return
	}
	delete(v.byKey, key)
	o.invalidSpecs(v.counts())
}

// counts is the number of invalid autoscalers by reason (v.mu held).
func (v *invalidSpecs) counts() map[string]int {
	out := map[string]int{}
	for _, s := range v.byKey {
		out[s.reason]++
	}
	return out
}
