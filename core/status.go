package core

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

const (
	// StatusConfigMapKey holds the status YAML.
	StatusConfigMapKey = "status"
	// EvictionsConfigMapKey holds the evictions of the scale-down under
	// way (scaledown.EncodeEvictions), read back when tidal starts.
	EvictionsConfigMapKey = "scaleDownEvictions"
	// StatusUpdatedAnnotation is when the status was last written.
	StatusUpdatedAnnotation = "tidal.dev/last-updated"
	// statusRefresh is how often an unchanged status is written anyway,
	// so its time stays fresh.
	statusRefresh = time.Minute
)

// Status is what the status ConfigMap says, in YAML.
type Status struct {
	Time        string            `json:"time"`
	ClusterWide ClusterWideStatus `json:"clusterWide"`
	NodeGroups  []NodeGroupStatus `json:"nodeGroups"`
	// ScheduleProblems are the malformed items of the tidal-schedules
	// ConfigMap, which are ignored.
	ScheduleProblems []string `json:"scheduleProblems,omitempty"`
	// Evictions are the evictions of the scale-down under way, kept
	// under EvictionsConfigMapKey; nil when the iteration did not reach
	// scale-down: the ConfigMap keeps what it had.
	Evictions []scaledown.Eviction `json:"-"`
}

// ClusterWideStatus is the cluster's health and the last scale-up decision.
type ClusterWideStatus struct {
	Health    HealthStatus    `json:"health"`
	ScaleUp   ScaleUpStatus   `json:"scaleUp"`
	ScaleDown ScaleDownStatus `json:"scaleDown"`
	// Replacing are the nodes being replaced, and why.
	Replacing []ReplacingEntry `json:"replacing,omitempty"`
	// Consolidation is the replacements' (nil: --consolidation-replace
	// is off).
	Consolidation *ConsolidationStatus `json:"consolidation,omitempty"`
}

// ScaleDownStatus is what the last scale-down plan found: which nodes can
// go and since when, which must stay and why (with the blocking pod).
type ScaleDownStatus struct {
	Status           string             `json:"status"`
	Cooldown         string             `json:"cooldown,omitempty"`
	Candidates       int                `json:"candidates"`
	NotUnderutilized int                `json:"notUnderutilized"`
	Unneeded         []UnneededEntry    `json:"unneeded,omitempty"`
	Unremovable      []UnremovableEntry `json:"unremovable,omitempty"`
	Removing         []string           `json:"removing,omitempty"`
	PlanReused       bool               `json:"planReused,omitempty"`
}

// UnneededEntry is a node whose pods all fit elsewhere.
type UnneededEntry struct {
	Node        string `json:"node"`
	NodeGroup   string `json:"nodeGroup"`
	Since       string `json:"since"`
	Utilization string `json:"utilization"`
	Empty       bool   `json:"empty,omitempty"`
}

// UnremovableEntry is a node that must stay, and why.
type UnremovableEntry struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

// HealthStatus is the cluster's health.
type HealthStatus struct {
	Status     string         `json:"status"`
	Reason     string         `json:"reason,omitempty"`
	NodeCounts map[string]int `json:"nodeCounts"`
}

// ScaleUpStatus explains the last scale-up decision.
type ScaleUpStatus struct {
	Status            string           `json:"status"`
	UnschedulablePods int              `json:"unschedulablePods"`
	NotYetScheduled   int              `json:"notYetTriedByScheduler,omitempty"`
	FitExisting       int              `json:"fitExistingOrUpcomingNodes,omitempty"`
	Expendable        int              `json:"expendable,omitempty"`
	TooYoung          int              `json:"tooYoung,omitempty"`
	Skipped           int              `json:"skippedForTime,omitempty"`
	ScaleUps          []ScaleUpEntry   `json:"scaleUps,omitempty"`
	NoScaleUp         []NoScaleUpEntry `json:"noScaleUp,omitempty"`
	LastDecisionMs    int64            `json:"lastDecisionMilliseconds"`
}

// ScaleUpEntry is one scale-up of the last decision, with the options the
// expander weighed and how it chose.
type ScaleUpEntry struct {
	NodeGroup string   `json:"nodeGroup"`
	From      int      `json:"from"`
	To        int      `json:"to"`
	Pods      int      `json:"pods"`
	Balanced  bool     `json:"balanced,omitempty"`
	Options   []string `json:"options"`
	Expander  []string `json:"expander"`
}

// NoScaleUpEntry is a set of equivalent pods no group can help.
type NoScaleUpEntry struct {
	Pods    int    `json:"pods"`
	Example string `json:"example"`
	Reasons string `json:"reasons"`
}

// NodeGroupStatus is one group's sizes, health and last activity.
type NodeGroupStatus struct {
	Name        string `json:"name"`
	Health      string `json:"health"`
	Reason      string `json:"reason,omitempty"`
	MinSize     int    `json:"minSize"`
	MaxSize     int    `json:"maxSize"`
	Target      int    `json:"cloudProviderTarget"`
	Registered  int    `json:"registered"`
	Ready       int    `json:"ready"`
	Upcoming    int    `json:"upcoming"`
	BackoffTill string `json:"backoffUntil,omitempty"`
	LastFailure string `json:"lastFailure,omitempty"`
	LastScaleUp string `json:"lastScaleUp,omitempty"`
	// Scheduled is what the active entries of the tidal-schedules
	// ConfigMap set, such as "min 10, max 20 (office-hours)".
	Scheduled string `json:"scheduled,omitempty"`
}

// statusWriter writes the status ConfigMap. It reads the ConfigMap once
// (and again after a conflict) and updates it from there, keeping its
// labels and annotations: the installation creates it (deploy/), and
// tidal's Role lets it get and update that one ConfigMap only. It creates
// the ConfigMap only where it is missing and tidal may create ConfigMaps.
type statusWriter struct {
	client  kubernetes.Interface
	enabled bool
	ns      string
	name    string
	clock   clock.Clock
	// caLayout writes Cluster Autoscaler's layout; caPrev are its
	// conditions' transition times as last written.
	caLayout bool
	caPrev   caTransitions

	mu        sync.Mutex
	cm        *corev1.ConfigMap
	last      Status
	lastWrite time.Time
}

func newStatusWriter(client kubernetes.Interface, opts Options, c clock.Clock) *statusWriter {
	return &statusWriter{client: client, enabled: opts.WriteStatusConfigMap, ns: opts.Namespace, name: opts.StatusConfigMapName, clock: c,
		caLayout: opts.ClusterAutoscalerStatusLayout}
}

// Object is the ConfigMap as last read or written, for events.
func (w *statusWriter) Object() *corev1.ConfigMap {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cm
}

func (w *statusWriter) setObject(cm *corev1.ConfigMap) {
	w.mu.Lock()
	w.cm = cm
	w.mu.Unlock()
}

// write stores s unless it is the same as last time and was written
// recently.
func (w *statusWriter) write(ctx context.Context, s Status) error {
	if !w.enabled || w.client == nil {
		return nil
	}
	now := w.clock.Now()
	unchanged := s
	unchanged.Time = w.last.Time
	if reflect.DeepEqual(unchanged, w.last) && now.Sub(w.lastWrite) < statusRefresh {
		return nil
	}
	var out any = s
	var transitions caTransitions
	if w.caLayout {
		out, transitions = clusterAutoscalerStatus(s, w.caPrev, now)
	}
	raw, err := yaml.Marshal(out)
	if err != nil {
		return fmt.Errorf("encode status: %w", err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error { return w.store(ctx, string(raw), s.Evictions, now) })
	if err != nil {
		return fmt.Errorf("write status ConfigMap %s/%s: %w", w.ns, w.name, err)
	}
	w.last, w.lastWrite, w.caPrev = s, now, transitions
	klog.FromContext(ctx).V(5).Info("Status written", "configMap", w.ns+"/"+w.name)
	return nil
}

// store puts the status YAML into the ConfigMap: an update of the one last
// seen, read first when there is none. A conflict or a vanished ConfigMap
// makes the next try read it again.
func (w *statusWriter) store(ctx context.Context, status string, evictions []scaledown.Eviction, now time.Time) error {
	cms := w.client.CoreV1().ConfigMaps(w.ns)
	cm := w.Object()
	if cm == nil {
		got, err := cms.Get(ctx, w.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return w.create(ctx, dataOf(status, evictions, nil), now)
		}
		if err != nil {
			return err
		}
		cm = got
	}
	next := cm.DeepCopy()
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	maps.Copy(next.Annotations, w.annotations(now))
	next.Data = dataOf(status, evictions, cm.Data)
	written, err := cms.Update(ctx, next, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		w.setObject(nil)
	}
	if err != nil {
		return err
	}
	w.setObject(written)
	return nil
}

// annotations are the last-updated annotations: tidal's, and Cluster
// Autoscaler's in its layout.
func (w *statusWriter) annotations(now time.Time) map[string]string {
	a := map[string]string{StatusUpdatedAnnotation: now.UTC().Format(time.RFC3339)}
	if w.caLayout {
		a[CAStatusUpdatedAnnotation] = now.Format(CAStatusTimeFormat)
	}
	return a
}

// dataOf is the ConfigMap's data: the status, and the evictions (nil:
// those of before, if any).
func dataOf(status string, evictions []scaledown.Eviction, before map[string]string) map[string]string {
	data := map[string]string{StatusConfigMapKey: status}
	if evictions != nil {
		data[EvictionsConfigMapKey] = scaledown.EncodeEvictions(evictions)
	} else if old, ok := before[EvictionsConfigMapKey]; ok {
		data[EvictionsConfigMapKey] = old
	}
	return data
}

// evictions reads the evictions the status ConfigMap keeps, as tidal
// starts: none where it writes no status or the ConfigMap is missing.
// What cannot be read back is in errs: the other evictions are kept.
func (w *statusWriter) evictions(ctx context.Context) (evs []scaledown.Eviction, errs []error, err error) {
	if !w.enabled || w.client == nil {
		return nil, nil, nil
	}
	got, err := w.client.CoreV1().ConfigMaps(w.ns).Get(ctx, w.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read the status ConfigMap %s/%s: %w", w.ns, w.name, err)
	}
	w.setObject(got)
	raw, ok := got.Data[EvictionsConfigMapKey]
	if !ok {
		return nil, nil, nil
	}
	evs, errs = scaledown.DecodeEvictions(raw, w.clock.Now())
	return evs, errs, nil
}

// create makes the ConfigMap where the installation did not.
func (w *statusWriter) create(ctx context.Context, data map[string]string, now time.Time) error {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: w.name, Namespace: w.ns, Annotations: w.annotations(now)},
		Data:       data,
	}
	written, err := w.client.CoreV1().ConfigMaps(w.ns).Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("it does not exist, and creating it failed (install it with deploy/): %w", err)
	}
	w.setObject(written)
	return nil
}
