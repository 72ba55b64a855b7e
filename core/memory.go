package core

import (
	"math/rand/v2"
	"time"

	"github.com/tidal-autoscaler/tidal/core/consolidate"
	"github.com/tidal-autoscaler/tidal/core/nominate"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
)

// memory is what the node loop's decisions carry from one iteration to the
// next; each decision gets its part as data.
type memory struct {
	// scaleUp and scaleDown keep the last plans, reused while their input
	// is the same.
	scaleUp   scaleup.Memory
	scaleDown scaledown.Planner
	// pendingOrder sorts the pending pods from the last iteration's order.
	pendingOrder scaleup.PendingOrder
	// unneeded is since when each unneeded node has been so
	// (scaledown.Track).
	unneeded scaledown.Tracking
	// scaleDownOver is when the last scale-down was found over
	// (scaledown.Settled): the evictions since are the scale-down under
	// way's, and the pods they moved keep their nodes.
	scaleDownOver time.Time
	// restored are the evictions the status ConfigMap kept from before
	// tidal started, read once (evictionsRead).
	restored      []scaledown.Eviction
	evictionsRead bool
	// consolidation is the replacement in flight and the backoff.
	consolidation consolidate.State
	// lastScaleUp starts --scale-down-delay-after-add.
	lastScaleUp time.Time
	// unfinished are the keys of the pod groups the last scale-up decision
	// left for lack of time: the next one takes them first.
	unfinished map[string]bool
	// unused are the nodes seen starting and not seen running a pod since
	// (scaledown.UnusedNewNodes).
	unused map[string]bool
	// nominations are the pods tidal nominated to planned nodes.
	nominations nominate.State
	// rnd draws each decision's seed (the expander's ties).
	rnd *rand.Rand
}
