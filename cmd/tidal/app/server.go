package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"
)

// health is what /healthz reports: healthy unless this replica leads and
// its node loop has been inactive for longer than maxInactivity.
type health struct {
	maxInactivity time.Duration
	lastActivity  atomic.Pointer[func() time.Time]
}

func (h *health) setActivitySource(f func() time.Time) { h.lastActivity.Store(&f) }
func (h *health) clearActivitySource()                 { h.lastActivity.Store(nil) }

func (h *health) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	if f := h.lastActivity.Load(); f != nil {
		if idle := time.Since((*f)()); idle > h.maxInactivity {
			http.Error(w, fmt.Sprintf("node loop inactive for %v (limit %v)", idle.Round(time.Second), h.maxInactivity), http.StatusInternalServerError)
			return
		}
	}
	fmt.Fprintln(w, "ok")
}

// serveHTTP listens on addr and serves /healthz and /metrics until ctx
// ends. Listening happens before it returns, so a bad or busy address is an
// immediate error.
func serveHTTP(ctx context.Context, addr string, reg *prometheus.Registry, h *health) (<-chan struct{}, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--address=%s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/healthz", h)
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "HTTP server stopped", "address", addr)
		}
	}()
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	return done, nil
}
