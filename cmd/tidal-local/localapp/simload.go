package localapp

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
	"github.com/tidal-autoscaler/tidal/localcluster"
)

// SimulatedLoadAnnotation, on a HorizontalPodAutoscaler or a PodAutoscaler
// in tidal-local, sets the simulated load its metrics read:
// "cpu=1500m, requests_per_second=120". Each entry is a metric's name (a
// resource name, or the metric's own name) and its total over the target's
// running pods, as a quantity in the metric's base unit: cores for cpu,
// bytes for memory. Pods metrics and resources split the total evenly over
// the pods; Object and External metrics read it as it is.
const SimulatedLoadAnnotation = "local.tidal.dev/simulated-load"

// simLoadInterval is how often tidal-local reads the annotations.
const simLoadInterval = time.Second

// parseSimulatedLoad reads the annotation's value: metric name to load.
func parseSimulatedLoad(value string) (map[string]float64, error) {
	out := map[string]float64{}
	for entry := range strings.SplitSeq(value, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, q, ok := strings.Cut(entry, "=")
		name, q = strings.TrimSpace(name), strings.TrimSpace(q)
		if !ok || name == "" {
			return nil, fmt.Errorf("entry %q: want METRIC=QUANTITY, such as cpu=1500m", entry)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("metric %s is given twice", name)
		}
		qty, err := resource.ParseQuantity(q)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: %w", name, q, err)
		}
		if qty.Sign() < 0 {
			return nil, fmt.Errorf("%s=%s: a load must not be negative", name, q)
		}
		out[name] = qty.AsApproximateFloat64()
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no metric: want METRIC=QUANTITY[,METRIC=QUANTITY...], such as cpu=1500m")
	}
	return out, nil
}

// annotatedAutoscaler is an autoscaler that carries the annotation.
type annotatedAutoscaler struct {
	kind, namespace, name, value string
}

// wantedLoads are the loads the annotations ask for, by Simulated key, and
// one error for each annotation that could not be read (its autoscaler's
// metrics then have no load of their own).
func wantedLoads(autoscalers []annotatedAutoscaler) (map[string]float64, []error) {
	want := map[string]float64{}
	var errs []error
	for _, a := range autoscalers {
		loads, err := parseSimulatedLoad(a.value)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s/%s: annotation %s=%q: %w", a.kind, a.namespace, a.name, SimulatedLoadAnnotation, a.value, err))
			continue
		}
		for metric, load := range loads {
			want[metrics.SimulatedKey(a.namespace, a.name, metric)] = load
		}
	}
	return want, errs
}

// loadWatcher keeps the simulated source in step with the annotations.
type loadWatcher struct {
	sim  *metrics.Simulated
	list func(ctx context.Context) ([]annotatedAutoscaler, error)
	// note reports a change or a bad annotation on the timeline.
	note func(format string, args ...any)
	// applied are the loads set from annotations; reported the errors
	// already shown.
	applied  map[string]float64
	reported map[string]bool
}

func newLoadWatcher(client kubernetes.Interface, pas *v1alpha1.Client, sim *metrics.Simulated, note func(string, ...any)) *loadWatcher {
	return &loadWatcher{sim: sim, note: note, applied: map[string]float64{}, reported: map[string]bool{},
		list: func(ctx context.Context) ([]annotatedAutoscaler, error) { return listAnnotated(ctx, client, pas) }}
}

// watchSimulatedLoads sets sim's loads from the autoscalers' annotations
// until the returned function is called (which waits for the watcher to
// stop).
func watchSimulatedLoads(ctx context.Context, cluster *localcluster.Cluster, sim *metrics.Simulated, tl *timeline) (func(), error) {
	pas, err := v1alpha1.NewForConfig(cluster.Config)
	if err != nil {
		return nil, fmt.Errorf("simulated load: %w", err)
	}
	w := newLoadWatcher(cluster.Client, pas, sim, tl.note)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); w.run(ctx) }()
	return func() { cancel(); <-done }, nil
}

// run syncs every simLoadInterval until ctx ends.
func (w *loadWatcher) run(ctx context.Context) { repeat(ctx, simLoadInterval, w.sync) }

// repeat calls f, then again every interval, until ctx ends.
func repeat(ctx context.Context, interval time.Duration, f func(context.Context)) {
	for {
		f(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// sync reads the annotations and sets, changes or removes loads. When the
// list fails, nothing changes.
func (w *loadWatcher) sync(ctx context.Context) {
	autoscalers, err := w.list(ctx)
	if err != nil {
		w.report(fmt.Sprintf("simulated load: cannot read the %s annotations: %v", SimulatedLoadAnnotation, err))
		return
	}
	want, errs := wantedLoads(autoscalers)
	for _, err := range errs {
		w.report(err.Error())
	}
	for _, key := range slices.Sorted(maps.Keys(want)) {
		if old, ok := w.applied[key]; !ok || old != want[key] {
			w.sim.Set(key, metrics.Constant(want[key]))
			w.note("simulated load %s = %g", key, want[key])
		}
	}
	for key := range w.applied {
		if _, ok := want[key]; !ok {
			w.sim.Set(key, nil)
			w.note("simulated load %s removed", key)
		}
	}
	w.applied = want
}

// report notes a message once.
func (w *loadWatcher) report(msg string) {
	if !w.reported[msg] {
		w.reported[msg] = true
		w.note("%s", msg)
	}
}

// listAnnotated lists the HorizontalPodAutoscalers and PodAutoscalers of
// every namespace that carry the annotation. PodAutoscalers count only
// where their CRD is installed.
func listAnnotated(ctx context.Context, client kubernetes.Interface, pas *v1alpha1.Client) ([]annotatedAutoscaler, error) {
	var out []annotatedAutoscaler
	add := func(kind string, m metav1.ObjectMeta) {
		if v, ok := m.Annotations[SimulatedLoadAnnotation]; ok {
			out = append(out, annotatedAutoscaler{kind: kind, namespace: m.Namespace, name: m.Name, value: v})
		}
	}
	hpas, err := client.AutoscalingV2().HorizontalPodAutoscalers(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list HorizontalPodAutoscalers: %w", err)
	}
	for _, h := range hpas.Items {
		add("HorizontalPodAutoscaler", h.ObjectMeta)
	}
	list, err := pas.PodAutoscalers(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return out, nil
	case err != nil:
		return nil, fmt.Errorf("list PodAutoscalers: %w", err)
	}
	for _, p := range list.Items {
		add(v1alpha1.Kind, p.ObjectMeta)
	}
	return out, nil
}
