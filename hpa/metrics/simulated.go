package metrics

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/hpa"
)

// DefaultSimulatedWindow is the sampling window the simulated per-pod
// samples claim.
const DefaultSimulatedWindow = 15 * time.Second

// Load is a metric's total demand at an instant, in the metric's base unit:
// cores for cpu, bytes for memory, the metric's own unit otherwise.
type Load func(now time.Time) float64

// Constant is a load that does not change.
func Constant(total float64) Load { return func(time.Time) float64 { return total } }

// Simulated is a metric source without a metrics pipeline: each metric
// follows a load that a demo or a test sets, and the pods share it the way
// real pods share traffic.
//
//   - Resource, ContainerResource and Pods metrics: the load is split evenly
//     over the Running pods that are not being deleted; each gets a sample
//     of load/n taken at the sync time.
//   - Object metrics: the object's value is the load.
//   - External metrics (Prometheus ones included): one series whose value is
//     the load.
//
// A metric is looked up as "<namespace>/<autoscaler>/<name>" (SimulatedKey),
// then "<namespace>/<name>", then "<name>", where the name is the resource
// name (cpu, memory) or the metric's name. A metric
// without a load, or set to fail, is invalid. Simulated is safe for
// concurrent use.
type Simulated struct {
	mu        sync.RWMutex
	entries   map[string]simEntry
	listeners []listener
	nextID    int
	// Window is the window the samples claim (DefaultSimulatedWindow).
	Window time.Duration
}

type listener struct {
	id int
	f  func()
}

type simEntry struct {
	load Load
	err  error
}

// NewSimulated returns a source with no loads set.
func NewSimulated() *Simulated {
	return &Simulated{entries: map[string]simEntry{}, Window: DefaultSimulatedWindow}
}

// Set makes a metric follow load. The key is "<name>" for every namespace,
// "<namespace>/<name>" for one, or SimulatedKey for one autoscaler. A nil
// load removes the metric.
func (s *Simulated) Set(key string, load Load) {
	s.mu.Lock()
	if load == nil {
		delete(s.entries, key)
	} else {
		s.entries[key] = simEntry{load: load}
	}
	s.mu.Unlock()
	s.changed()
}

// OnChange registers f, called after every Set and Fail: a pod loop reading
// this source can sync at once instead of at its next period. The returned
// function unregisters f (a pod loop whose term ended).
func (s *Simulated) OnChange(f func()) (remove func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	id := s.nextID
	s.listeners = append(s.listeners, listener{id: id, f: f})
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.listeners = slices.DeleteFunc(s.listeners, func(l listener) bool { return l.id == id })
	}
}

func (s *Simulated) changed() {
	s.mu.RLock()
	listeners := slices.Clone(s.listeners)
	s.mu.RUnlock()
	for _, l := range listeners {
		l.f()
	}
}

// Fail makes a metric fail with err until it is Set again, as an outage of
// its metrics pipeline would.
func (s *Simulated) Fail(key string, err error) {
	s.mu.Lock()
	s.entries[key] = simEntry{err: err}
	s.mu.Unlock()
	s.changed()
}

// Fetch computes the metric from its load.
func (s *Simulated) Fetch(_ context.Context, req Request) hpa.MetricData {
	name, perPod := simulatedName(req.Metric)
	if name == "" {
		return failed(fmt.Errorf("metric type %q has no simulated source", req.Metric.Type))
	}
	s.mu.RLock()
	var e simEntry
	ok := false
	for _, key := range []string{SimulatedKey(req.Namespace, req.Autoscaler, name), req.Namespace + "/" + name, name} {
		if e, ok = s.entries[key]; ok {
			break
		}
	}
	s.mu.RUnlock()
	switch {
	case !ok:
		return failed(fmt.Errorf("no simulated load is set for metric %s", name))
	case e.err != nil:
		return failed(fmt.Errorf("simulated metric %s: %w", name, e.err))
	}
	total, err := toMilli(e.load(req.Now))
	if err != nil {
		return failed(fmt.Errorf("simulated metric %s: %w", name, err))
	}
	if !perPod {
		if req.Metric.Type == autoscalingv2.ObjectMetricSourceType {
			return hpa.MetricData{ObjectValue: total, Timestamp: req.Now}
		}
		return hpa.MetricData{ExternalValues: []int64{total}, Timestamp: req.Now}
	}
	return hpa.MetricData{PodMetrics: s.share(req, total), Timestamp: req.Now}
}

// SimulatedKey is the key of a metric's load for one autoscaler.
func SimulatedKey(namespace, autoscaler, metric string) string {
	return namespace + "/" + autoscaler + "/" + metric
}

// share splits a total over the running pods.
func (s *Simulated) share(req Request, total int64) hpa.PodMetrics {
	running := 0
	for _, p := range req.Pods {
		if isRunning(p) {
			running++
		}
	}
	out := make(hpa.PodMetrics, running)
	if running == 0 {
		return out
	}
	each := int64(math.Round(float64(total) / float64(running)))
	window := s.Window
	if window <= 0 {
		window = DefaultSimulatedWindow
	}
	for _, p := range req.Pods {
		if isRunning(p) {
			out[p.Name] = hpa.PodMetric{Timestamp: req.Now, Window: window, Value: each}
		}
	}
	return out
}

// isRunning reports whether a pod takes a share of the load.
func isRunning(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil
}

// simulatedName is the name a metric's load is set under, and whether the
// load is spread over pods.
func simulatedName(m autoscalingv2.MetricSpec) (string, bool) {
	switch {
	case m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil:
		return string(m.Resource.Name), true
	case m.Type == autoscalingv2.ContainerResourceMetricSourceType && m.ContainerResource != nil:
		return string(m.ContainerResource.Name), true
	case m.Type == autoscalingv2.PodsMetricSourceType && m.Pods != nil:
		return m.Pods.Metric.Name, true
	case m.Type == autoscalingv2.ObjectMetricSourceType && m.Object != nil:
		return m.Object.Metric.Name, false
	case m.Type == autoscalingv2.ExternalMetricSourceType && m.External != nil:
		return m.External.Metric.Name, false
	}
	return "", false
}
