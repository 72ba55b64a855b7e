package controller

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tidal-autoscaler/tidal/hpa"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
)

// The heartbeat goes through the work queue: a worker takes it and notes
// the time, so the pod loop's LastActivity stops when its only worker is
// stuck in a sync, and moves again once the worker is free.
func TestHeartbeatStopsWhileTheWorkersAreStuck(t *testing.T) {
	h := newHarness(t, hpa.Config{})
	h.c.cfg.Workers, h.c.cfg.SyncPeriod = 1, 10*time.Millisecond
	h.deployment("ns", "web", 2)
	entered, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	h.source = metrics.SourceFunc(func(context.Context, metrics.Request) hpa.MetricData {
		close(entered)
		<-release // a fetch that ignores its context
		return hpa.MetricData{}
	})
	ctx, cancel := context.WithCancel(quiet())
	done := make(chan struct{})
	go func() { defer close(done); h.c.Run(ctx) }()
	defer func() { unblock(); cancel(); <-done }()

	beats := func(at time.Time) {
		t.Helper()
		err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return h.c.LastActivity().Equal(at), nil
		})
		if err != nil {
			t.Fatalf("LastActivity stays %v, want %v", h.c.LastActivity(), at)
		}
	}
	h.clock.Step(time.Minute)
	beats(h.clock.Now())

	h.addPA(cpuPA("ns", "web", 50, 1, 10))
	h.c.queue.Add("ns/web")
	<-entered
	stuckAt := h.c.LastActivity()
	h.clock.Step(time.Minute)
	// The heartbeat is queued behind the stuck sync and nobody takes it.
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return h.c.queue.Len() > 0, nil
	}); err != nil {
		t.Fatal("the heartbeat was never queued")
	}
	if got := h.c.LastActivity(); !got.Equal(stuckAt) {
		t.Fatalf("LastActivity moved to %v while the only worker was stuck", got)
	}
	unblock()
	beats(h.clock.Now())
}
