package controller

import (
	"testing"
	"time"

	"github.com/tidal-autoscaler/tidal/hpa"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
)

// TestDryRunDecidesButWritesNothing: in shadow mode the sync computes the
// rescale the acting controller would make and records it, once while it
// stands, but writes neither the scale nor the status.
func TestDryRunDecidesButWritesNothing(t *testing.T) {
	h := newHarness(t, hpa.DefaultConfig())
	h.c.cfg.DryRun = true
	h.deployment("ns", "web", 2)
	h.addPA(cpuPA("ns", "web", 50, 1, 10))
	h.sim.Set("cpu", metrics.Constant(0.2)) // 100% of the request on a 50% target: 4 wanted

	h.sync("ns/web")
	h.sync("ns/web")
	if got := h.scales.replicas("ns", "web"); got != 2 || h.scales.updates != 0 {
		t.Errorf("replicas %d after %d scale writes; want 2 and none", got, h.scales.updates)
	}
	if h.pas.writes != 0 {
		t.Errorf("%d status writes, want none", h.pas.writes)
	}
	ev := h.events()
	want := "Normal SuccessfulRescale New size: 4; reason: cpu resource utilization (percentage of request) above target (dry run: not written)"
	if len(ev) != 1 || ev[0] != want {
		t.Errorf("events %q, want the one rescale once:\n%q", ev, want)
	}

	// The load falls to 75% of the requests: a new decision (3) is recorded.
	h.sim.Set("cpu", metrics.Constant(0.15))
	h.clock.Step(time.Minute)
	h.sync("ns/web")
	if ev := h.events(); !hasEvent(ev, "Normal SuccessfulRescale New size: 3;") {
		t.Errorf("after the load rose, events %q; want a rescale to 3", ev)
	}
}
