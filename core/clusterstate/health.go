package clusterstate

import (
	"fmt"
	"math"
	"time"
)

// Health is whether the cluster looks reliable enough to scale.
type Health struct {
	Healthy bool
	// Registered counts nodes; Ready the Ready ones; NotStarted the unready
	// ones registered less than the startup time ago (still booting);
	// Unready the rest.
	Registered, Ready, NotStarted, Unready int
	// Reason explains an unhealthy cluster.
	Reason string
}

// UpdateHealth judges the cluster from all its registered nodes: it is
// unhealthy when more than max(OkTotalUnreadyCount, MaxTotalUnreadyPercentage
// of the nodes) are unready, and then nothing scales.
func (t *Tracker) UpdateHealth(now time.Time, nodes []NodeObservation) Health {
	h := Health{Registered: len(nodes)}
	for _, n := range nodes {
		switch {
		case n.Ready:
			h.Ready++
		case now.Sub(n.Created) < t.startupTime():
			h.NotStarted++
		default:
			h.Unready++
		}
	}
	allowed := max(float64(t.opts.OkTotalUnreadyCount), math.Floor(t.opts.MaxTotalUnreadyPercentage/100*float64(h.Registered)))
	h.Healthy = float64(h.Unready) <= allowed
	if !h.Healthy {
		h.Reason = fmt.Sprintf("%d of %d nodes are unready, more than the %d allowed (--ok-total-unready-count=%d, --max-total-unready-percentage=%v)",
			h.Unready, h.Registered, int(allowed), t.opts.OkTotalUnreadyCount, t.opts.MaxTotalUnreadyPercentage)
	}
	t.health = h
	return h
}

// startupTime is --max-node-startup-time, or else the provision time.
func (t *Tracker) startupTime() time.Duration {
	if t.opts.MaxNodeStartupTime > 0 {
		return t.opts.MaxNodeStartupTime
	}
	return t.opts.MaxNodeProvisionTime
}

// Health returns the last judgement.
func (t *Tracker) Health() Health { return t.health }
