package aws

import (
	"context"
	"time"

	"k8s.io/utils/clock"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

// DefaultLaunchWatchInterval is how often, at most, the scaling activities
// of a group with launches in flight are read: one call per group every two
// seconds, and only while launches are in flight, keeps well within Auto
// Scaling's API rate limits.
const DefaultLaunchWatchInterval = 2 * time.Second

// maxWatchBackoff bounds how far the interval of a watch grows while its
// reads fail: 2^4 intervals (32s by default).
const maxWatchBackoff = 4

// watchDelay is the wait before a watch's next read: the interval, doubled
// for each read that failed in a row (AWS may be throttling), up to 2^4
// times.
func watchDelay(interval time.Duration, failedReads int) time.Duration {
	return interval << min(max(failedReads, 0), maxWatchBackoff)
}

// launchWatch follows the launches of one group that tidal asked for. It
// is guarded by Cloud.mu; the goroutine reading the activities owns the
// rest.
type launchWatch struct {
	// since is when the first request of the watch was made, less the
	// clock skew allowed: launches started from then on are the watch's.
	since time.Time
	// wanted is how many instances were asked for since.
	wanted int
	// startSeq is the sequence number taken when the watch started: a
	// refresh begun before knows nothing of its requests.
	startSeq uint64
	// deadline is when the watch ends without an outcome.
	deadline time.Time
	// ctx ends when the watch is stopped or the provider's context ends;
	// it cancels a read in progress (a read is safe to cut short).
	ctx    context.Context
	cancel context.CancelFunc
}

// NotifyInstanceErrors implements cloudprovider.InstanceErrorNotifier.
// From then on, the launches of every IncreaseSize are watched until they
// are all in service, fail, are cancelled, or LaunchWatchTimeout passes;
// notify is called with the group's name when the latest launch failed,
// and the group's placeholders carry the error from then on. A nil
// notify stops the watches.
func (c *Cloud) NotifyInstanceErrors(notify func(group string)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notify = notify
	if notify == nil {
		c.stopWatchesLocked()
	}
}

// watchLaunchesLocked starts watching the launches of a group just grown
// by delta, or adds them to the watch in progress. It returns how many
// instances the watch waits for, 0 when nothing is watched.
func (c *Cloud) watchLaunchesLocked(name string, delta int) int {
	if c.notify == nil || c.closed {
		return 0
	}
	now := c.clock.Now()
	if w := c.watches[name]; w != nil {
		w.wanted += delta
		w.deadline = now.Add(c.cfg.LaunchWatchTimeout)
		return w.wanted
	}
	w := &launchWatch{since: now.Add(-clockSkew), wanted: delta, startSeq: c.nextSeqLocked(),
		deadline: now.Add(c.cfg.LaunchWatchTimeout)}
	w.ctx, w.cancel = context.WithCancel(c.ctx)
	c.watches[name] = w
	// The timer is set before IncreaseSize returns: the first read comes
	// one interval after the request, when AWS has had time to try.
	timer := c.clock.NewTimer(c.cfg.LaunchWatchInterval)
	c.watchers.Add(1)
	go c.runWatch(name, w, timer)
	return delta
}

// stopWatchLocked ends a group's watch, if any.
func (c *Cloud) stopWatchLocked(name string) {
	if w := c.watches[name]; w != nil {
		w.cancel()
		delete(c.watches, name)
	}
}

// stopWatchesLocked ends every watch.
func (c *Cloud) stopWatchesLocked() {
	for name := range c.watches {
		c.stopWatchLocked(name)
	}
}

// endWatch ends w if it is still the group's watch, and reports whether
// it was.
func (c *Cloud) endWatch(name string, w *launchWatch) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.watches[name] != w {
		return false
	}
	c.stopWatchLocked(name)
	return true
}

// settleWatchLocked ends the watch of a group a refresh found with every
// instance in service and none missing, when the refresh began after the
// watch did, and reports whether it did.
func (c *Cloud) settleWatchLocked(g *nodeGroup, seq uint64) bool {
	if w := c.watches[g.name]; w != nil && w.startSeq < seq && !g.st.convergingLocked() {
		c.stopWatchLocked(g.name)
		return true
	}
	return false
}

// runWatch reads the group's scaling activities every interval until the
// watch ends.
func (c *Cloud) runWatch(name string, w *launchWatch, timer clock.Timer) {
	defer c.watchers.Done()
	defer timer.Stop()
	failedReads := 0
	defer c.endWatch(name, w) // when the provider's context ends
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-timer.C():
		}
		if c.watchOnce(name, w, &failedReads) {
			return
		}
		timer.Reset(watchDelay(c.cfg.LaunchWatchInterval, failedReads))
	}
}

// watchOnce makes one read of a watch and acts on it; it reports whether
// the watch is over. A read that fails is logged and tried again later: it
// never counts as "no failure".
func (c *Cloud) watchOnce(name string, w *launchWatch, failedReads *int) bool {
	logger := c.logger().WithValues("asg", name)
	c.mu.Lock()
	if c.watches[name] != w {
		c.mu.Unlock()
		return true
	}
	since, wanted, deadline := w.since, w.wanted, w.deadline
	seq := c.nextSeqLocked()
	c.mu.Unlock()
	if now := c.clock.Now(); now.After(deadline) {
		if c.endWatch(name, w) {
			logger.Info("Stopped watching launches in flight: no outcome in time; failures are read at refreshes from now on",
				"timeout", c.cfg.LaunchWatchTimeout)
		}
		return true
	}
	ctx, cancel := context.WithTimeout(w.ctx, c.cfg.OperationTimeout)
	activities, err := c.describeActivities(ctx, name)
	cancel()
	if w.ctx.Err() != nil {
		return true // stopped during the read
	}
	if err != nil {
		*failedReads++
		logger.Error(err, "Could not read the scaling activities of launches in flight; trying again",
			"failedReads", *failedReads, "retryIn", watchDelay(c.cfg.LaunchWatchInterval, *failedReads))
		return false
	}
	*failedReads = 0
	l := readLaunches(name, activities, since)
	switch judgeLaunches(l, wanted) {
	case launchFailed:
		return c.reportFailure(name, w, l.failure, seq)
	case launchesDone:
		if c.endWatch(name, w) {
			logger.V(2).Info("Launches in flight are in service", "launched", l.succeeded)
		}
		return true
	}
	return false
}

// reportFailure records a launch failure read by a watch (the read began
// at seq) and tells the node loop, ending the watch. A read older than the
// group's last request or refresh changes nothing and the watch goes on.
func (c *Cloud) reportFailure(name string, w *launchWatch, info *cloudprovider.InstanceErrorInfo, seq uint64) bool {
	c.mu.Lock()
	g := c.groups[name]
	switch {
	case c.watches[name] != w:
		c.mu.Unlock()
		return true
	case g == nil:
		c.stopWatchLocked(name)
		c.mu.Unlock()
		return true
	case seq < g.st.failureSeq:
		c.mu.Unlock()
		return false
	}
	g.st.failure, g.st.failureSeq = info, seq
	c.stopWatchLocked(name)
	notify := c.notify
	c.mu.Unlock()
	c.logger().Info("Launch failed; telling the node loop", "asg", name,
		"outOfResources", info.ErrorClass == cloudprovider.OutOfResourcesErrorClass, "errorCode", info.ErrorCode, "message", info.ErrorMessage)
	if notify != nil {
		notify(name)
	}
	return true
}
