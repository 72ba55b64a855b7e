package app

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestInactiveLoops(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	limit := 10 * time.Minute
	tests := []struct {
		name string
		last map[string]time.Time
		want string
	}{
		{"no loop (a standby)", nil, ""},
		{"both fresh", map[string]time.Time{"node loop": now.Add(-time.Minute), "pod loop": now}, ""},
		{"exactly at the limit", map[string]time.Time{"pod loop": now.Add(-limit)}, ""},
		{"pod loop stuck", map[string]time.Time{"node loop": now, "pod loop": now.Add(-11 * time.Minute)},
			"pod loop inactive for 11m0s (limit 10m0s)"},
		{"both stuck, in order", map[string]time.Time{"pod loop": now.Add(-time.Hour), "node loop": now.Add(-20 * time.Minute)},
			"node loop inactive for 20m0s (limit 10m0s); pod loop inactive for 1h0m0s (limit 10m0s)"},
	}
	for _, tt := range tests {
		got := ""
		if err := staleLoops(tt.last, now, limit, "inactive"); err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// /healthz follows every tracked loop: a pod loop gone quiet fails it while
// the node loop is fine, and untracking (the end of a leadership term)
// makes it healthy again.
func TestHealthzFollowsEveryLoop(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	h := newHealth(time.Minute, time.Hour)
	h.now = func() time.Time { return now }
	get := func() (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		return rec.Code, strings.TrimSpace(rec.Body.String())
	}
	h.track(nodeLoopName, func() time.Time { return now })
	h.track(podLoopName, func() time.Time { return now.Add(-2 * time.Minute) })
	if code, body := get(); code != http.StatusInternalServerError || body != "pod loop inactive for 2m0s (limit 1m0s)" {
		t.Fatalf("/healthz = %d %q, want 500 naming the pod loop", code, body)
	}
	h.track(podLoopName, func() time.Time { return now })
	if code, body := get(); code != http.StatusOK || body != "ok" {
		t.Fatalf("/healthz = %d %q after the pod loop's controller took over, want ok", code, body)
	}
	h.track(nodeLoopName, func() time.Time { return now.Add(-time.Hour) })
	h.untrack(nodeLoopName)
	h.untrack(podLoopName)
	if code, _ := get(); code != http.StatusOK {
		t.Fatalf("/healthz = %d with no loop tracked, want ok", code)
	}
}

// Cluster Autoscaler's liveness path answers as /healthz does, healthy or
// not.
func TestHealthCheckPathAnswersAsHealthz(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	h := newHealth(time.Minute, time.Hour)
	h.now = func() time.Time { return now }
	mux := newMux(prometheus.NewRegistry(), h)
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, strings.TrimSpace(rec.Body.String())
	}
	for _, last := range []time.Time{now, now.Add(-time.Hour)} {
		h.track(nodeLoopName, func() time.Time { return last })
		wantCode, wantBody := get("/healthz")
		if code, body := get("/health-check"); code != wantCode || body != wantBody {
			t.Errorf("last activity %v ago: /health-check = %d %q, /healthz = %d %q", now.Sub(last), code, body, wantCode, wantBody)
		}
	}
	if code, _ := get("/healthz"); code != http.StatusInternalServerError {
		t.Errorf("/healthz = %d with the node loop an hour quiet, want 500", code)
	}
}

// --max-failing-time: /healthz fails when the node loop has run, but not
// successfully, for too long; activity alone does not keep it healthy.
func TestHealthzFollowsSuccessfulRuns(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	tests := []struct {
		name              string
		activity, success time.Time
		want              string
	}{
		{"active and successful", now, now.Add(-time.Minute), ""},
		{"active but failing too long", now, now.Add(-16 * time.Minute), "node loop without a successful run for 16m0s (limit 15m0s)"},
		{"both", now.Add(-11 * time.Minute), now.Add(-16 * time.Minute),
			"node loop inactive for 11m0s (limit 10m0s)\nnode loop without a successful run for 16m0s (limit 15m0s)"},
	}
	for _, tc := range tests {
		h := newHealth(10*time.Minute, 15*time.Minute)
		h.now = func() time.Time { return now }
		h.track(nodeLoopName, func() time.Time { return tc.activity })
		h.trackSuccess(nodeLoopName, func() time.Time { return tc.success })
		got := ""
		if err := h.check(); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
		h.untrack(nodeLoopName)
		if err := h.check(); err != nil {
			t.Errorf("%s: after untrack: %v", tc.name, err)
		}
	}
}
