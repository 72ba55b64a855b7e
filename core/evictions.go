package core

import (
	"context"
	"errors"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/core/act"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

// evictions are the drains' evictions that may hold the nodes of the pods
// they moved: the actuator's, and those the status ConfigMap kept from
// before tidal started, read at the first scale-down (one that cannot be
// read stops the scale-down: without them a moved pod could be evicted
// again). Stored entries that cannot be read back are reported and left
// out.
func (d *Decider) evictions(ctx context.Context, removing act.Removing, now time.Time) ([]scaledown.Eviction, error) {
	if !d.mem.evictionsRead {
		evs, bad, err := d.status.evictions(ctx)
		if err != nil {
			return nil, err
		}
		if len(bad) > 0 {
			err := errors.Join(bad...)
			klog.FromContext(ctx).Error(err, "Evictions kept in the status ConfigMap not read back; the others hold their pods' nodes",
				"kept", len(evs), "left", len(bad))
			d.events.OnStatus(d.status, corev1.EventTypeWarning, "EvictionsUnreadable",
				"%d eviction(s) kept in %s not read back, left out: %v", len(bad), EvictionsConfigMapKey, err)
		}
		d.mem.restored, d.mem.evictionsRead = evs, true
		if len(evs) > 0 {
			klog.FromContext(ctx).Info("Evictions of the scale-down under way read back; the nodes of the pods they moved stay until it is over",
				"evictions", len(evs))
		}
	}
	d.mem.restored = slices.DeleteFunc(d.mem.restored, func(e scaledown.Eviction) bool {
		return now.Sub(e.At) > scaledown.EvictionMemory
	})
	return append(slices.Clone(d.mem.restored), removing.Evictions...), nil
}

// underWay are the evictions at or after since (never nil).
func underWay(evictions []scaledown.Eviction, since time.Time) []scaledown.Eviction {
	out := []scaledown.Eviction{}
	for _, e := range evictions {
		if !e.At.Before(since) {
			out = append(out, e)
		}
	}
	return out
}
