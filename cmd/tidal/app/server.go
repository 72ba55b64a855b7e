package app

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"
)

// health is what /healthz reports: healthy unless a loop of this replica
// (the node loop, the pod loop; only the leader runs them) has shown no
// sign of life for longer than maxInactivity, or the node loop has had no
// successful iteration for longer than maxFailing (Cluster Autoscaler's
// --max-inactivity and --max-failing-time).
type health struct {
	maxInactivity time.Duration
	maxFailing    time.Duration
	now           func() time.Time

	mu        sync.Mutex
	loops     map[string]func() time.Time
	successes map[string]func() time.Time
}

func newHealth(maxInactivity, maxFailing time.Duration) *health {
	return &health{maxInactivity: maxInactivity, maxFailing: maxFailing, now: time.Now,
		loops: map[string]func() time.Time{}, successes: map[string]func() time.Time{}}
}

// trackSuccess makes /healthz follow a loop's last successful iteration
// too, until untrack.
func (h *health) trackSuccess(loop string, lastSuccess func() time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.successes[loop] = lastSuccess
}

// track makes /healthz follow a loop's last activity, replacing what was
// tracked under that name; untrack stops it.
func (h *health) track(loop string, lastActivity func() time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.loops[loop] = lastActivity
}

func (h *health) untrack(loop string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.loops, loop)
	delete(h.successes, loop)
}

// check is nil, or an error naming every loop inactive, or failing, for
// too long.
func (h *health) check() error {
	h.mu.Lock()
	last, success := times(h.loops), times(h.successes)
	h.mu.Unlock()
	now := h.now()
	return errors.Join(staleLoops(last, now, h.maxInactivity, "inactive"), staleLoops(success, now, h.maxFailing, "without a successful run"))
}

func times(fs map[string]func() time.Time) map[string]time.Time {
	out := make(map[string]time.Time, len(fs))
	for name, f := range fs {
		out[name] = f()
	}
	return out
}

// staleLoops is nil, or an error naming, in order, each loop whose last
// time is more than limit before now, and what it has been (state).
func staleLoops(last map[string]time.Time, now time.Time, limit time.Duration, state string) error {
	var msgs []string
	for _, name := range slices.Sorted(maps.Keys(last)) {
		if idle := now.Sub(last[name]); idle > limit {
			msgs = append(msgs, fmt.Sprintf("%s %s for %v (limit %v)", name, state, idle.Round(time.Second), limit))
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(strings.Join(msgs, "; "))
}

func (h *health) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	if err := h.check(); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	fmt.Fprintln(w, "ok")
}

// serveHTTP serves /healthz (also as /health-check) and /metrics on l
// until ctx ends; the channel closes once the server has stopped.
func serveHTTP(ctx context.Context, l net.Listener, reg *prometheus.Registry, h *health) <-chan struct{} {
	srv := &http.Server{Handler: newMux(reg, h), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "HTTP server stopped", "address", l.Addr().String())
		}
	}()
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	return done
}

// listen is given, if the caller opened one (WithListener), or else a
// listener on --address.
func listen(addr string, given net.Listener) (net.Listener, error) {
	if given != nil {
		return given, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--address=%s: %w", addr, err)
	}
	return l, nil
}

// newMux routes /healthz, Cluster Autoscaler's liveness path /health-check
// (the same answer, for manifests written for CA) and /metrics.
func newMux(reg *prometheus.Registry, h *health) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/healthz", h)
	mux.Handle("/health-check", h)
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	return mux
}
