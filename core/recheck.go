package core

import (
	"time"

	"github.com/tidal-autoscaler/tidal/core/scaleup"
)

// firstRecheck is how soon the loop looks again after a decision found
// pending pods a place on ready nodes.
const firstRecheck = 2 * time.Second

// nextRecheck is how soon the loop should decide again, given the last
// decision and the wait before it (zero: none): when the decision placed
// pending pods on ready nodes (not nodes still to come), the scheduler
// should bind them within moments. If it does not, the decision may have
// read an informer a moment behind the scheduler (a pod just bound, a
// node just filled) and no event will tell: look again after 2 s, then
// after twice as long each time it stays so, up to the scan interval.
// Zero means no recheck.
func nextRecheck(plan *scaleup.Plan, last, scan time.Duration) time.Duration {
	if plan == nil || plan.FitExisting-len(plan.Awaiting) <= 0 {
		return 0
	}
	if last <= 0 {
		return min(firstRecheck, scan)
	}
	return min(2*last, scan)
}
