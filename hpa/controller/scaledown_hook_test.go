package controller

import (
	"context"
	"errors"
	"testing"

	"github.com/tidal-autoscaler/tidal/hpa"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
)

// hookCalls records the calls before a scale-down and how many /scale writes had
// been made at each.
type hookCalls struct {
	h      *harness
	err    error
	calls  []Rescale
	writes []int
}

func (c *hookCalls) hook(_ context.Context, r Rescale) error {
	c.h.scales.mu.Lock()
	c.writes = append(c.writes, c.h.scales.updates)
	c.h.scales.mu.Unlock()
	c.calls = append(c.calls, r)
	return c.err
}

func TestBeforeScaleDownRunsBeforeTheWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{{"hook succeeds", nil}, {"hook fails: the scale-down is written all the same", errors.New("patch pods: the server is currently unable to handle the request")}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, hpa.DefaultConfig())
			calls := &hookCalls{h: h, err: tc.err}
			h.c.beforeScaleDown = calls.hook
			h.deployment("ns", "web", 12)
			h.addPA(cpuPA("ns", "web", 50, 2, 10))
			h.sync("ns/web") // above max: scaled down to 10 at once
			if got := h.scales.replicas("ns", "web"); got != 10 {
				t.Fatalf("replicas %d, want 10", got)
			}
			if len(calls.calls) != 1 {
				t.Fatalf("hook called %d times, want once", len(calls.calls))
			}
			r := calls.calls[0]
			if r.From != 12 || r.To != 10 || r.Namespace != "ns" || r.Target.Name != "web" || r.Target.Kind != "Deployment" || r.Selector != "app=web" {
				t.Errorf("hook got %+v", r)
			}
			if calls.writes[0] != 0 {
				t.Errorf("hook called after %d /scale write(s), want before any", calls.writes[0])
			}
			if !hasEvent(h.events(), "Normal SuccessfulRescale New size: 10") {
				t.Error("no SuccessfulRescale event")
			}
		})
	}
}

func TestBeforeScaleDownNotOnScaleUpNorInDryRun(t *testing.T) {
	h := newHarness(t, hpa.DefaultConfig())
	calls := &hookCalls{h: h}
	h.c.beforeScaleDown = calls.hook
	h.deployment("ns", "web", 2)
	h.addPA(cpuPA("ns", "web", 50, 1, 10))
	h.sim.Set("cpu", metrics.Constant(0.2))
	h.sync("ns/web")
	if got := h.scales.replicas("ns", "web"); got != 4 || len(calls.calls) != 0 {
		t.Fatalf("scale-up to %d (want 4) called the hook %d time(s), want none", got, len(calls.calls))
	}

	dry := newHarness(t, hpa.DefaultConfig())
	calls = &hookCalls{h: dry}
	dry.c.beforeScaleDown = calls.hook
	dry.c.cfg.DryRun = true
	dry.deployment("ns", "web", 12)
	dry.addPA(cpuPA("ns", "web", 50, 2, 10))
	dry.sync("ns/web")
	if got := dry.scales.replicas("ns", "web"); got != 12 || len(calls.calls) != 0 {
		t.Fatalf("dry run: replicas %d (want 12 untouched), hook called %d time(s), want none", got, len(calls.calls))
	}
}
