package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/hpa"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
)

// Event reasons, as the Kubernetes HPA controller names them, plus
// InvalidWatermarks and InvalidQuantity for what the API server's
// validation of tidal's objects did not catch.
const (
	EventSuccessfulRescale            = "SuccessfulRescale"
	EventFailedRescale                = "FailedRescale"
	EventFailedGetScale               = "FailedGetScale"
	EventFailedComputeMetricsReplicas = "FailedComputeMetricsReplicas"
	EventFailedUpdateStatus           = "FailedUpdateStatus"
	EventSelectorRequired             = "SelectorRequired"
	EventInvalidSelector              = "InvalidSelector"
	EventAmbiguousSelector            = "AmbiguousSelector"
	EventInvalidWatermarks            = "InvalidWatermarks"
	EventInvalidQuantity              = "InvalidQuantity"
)

// Sync syncs one autoscaler ("namespace/name") once. gone reports that it
// no longer exists. The error is an API failure worth a quick retry (reading
// or writing /scale, writing status); metric failures are not errors here:
// they are reported in the status and in events, and the next periodic
// sync tries again.
//
// A panic anywhere in the sync is recovered (see guard.go): it is counted,
// logged, reported on the autoscaler, and returned as an error.
func (c *Controller) Sync(ctx context.Context, key string) (gone bool, err error) {
	start := time.Now()
	var s *syncRun
	defer func() {
		if r := recover(); r != nil {
			gone, err = false, c.recovered(ctx, key, s, r)
			c.cfg.Observer.reconciled(actionNone, errorInternal, time.Since(start))
		}
	}()
	a, err := c.cfg.Store.Get(key)
	if err != nil {
		return false, err
	}
	if a == nil {
		c.selectors.remove(key)
		c.wanted.forget(key)
		c.invalid.forget(c.cfg.Observer, key)
		return true, nil
	}
	s = &syncRun{
		c: c, a: a, now: c.clock.Now(),
		status: *a.Status.DeepCopy(), history: a.History,
		action: actionNone, errLabel: errorNone,
		logger: klog.FromContext(ctx).WithValues("podAutoscaler", key),
	}
	err = s.runGuarded(ctx)
	if err != nil {
		s.errLabel = errorInternal
	}
	s.capacityCondition()
	s.scheduleCondition()
	c.requeueAtScheduleChange(a, s.now)
	if c.cfg.DryRun {
		// The status belongs to the autoscaler that acts.
		c.cfg.Observer.reconciled(s.action, s.errLabel, time.Since(start))
		return false, err
	}
	written, werr := c.cfg.Store.WriteStatus(ctx, a, s.status, compactHistory(s.history))
	if written {
		c.cfg.Observer.statusWritten()
	}
	if werr != nil {
		s.event(corev1.EventTypeWarning, EventFailedUpdateStatus, werr.Error())
		s.errLabel = errorInternal
		err = errors.Join(err, werr)
	}
	c.cfg.Observer.reconciled(s.action, s.errLabel, time.Since(start))
	return false, err
}

// syncRun is the state of one sync.
type syncRun struct {
	c   *Controller
	a   *Autoscaler
	now time.Time
	// status and history are what the sync writes back.
	status   autoscalingv2.HorizontalPodAutoscalerStatus
	history  hpa.History
	action   string
	errLabel string
	logger   klog.Logger
	// ref names the scale target in messages: Kind/namespace/name.
	ref string
	// targetPods are the target's pods, when the sync read them.
	targetPods []*corev1.Pod
}

// ConditionWaitingForCapacity is tidal's condition saying how many of the
// target's replicas wait for nodes, and which node groups are growing.
const ConditionWaitingForCapacity autoscalingv2.HorizontalPodAutoscalerConditionType = "WaitingForCapacity"

// capacityCondition sets WaitingForCapacity from the node loop's view of
// the target's pods; it says False when none waits.
func (s *syncRun) capacityCondition() {
	if s.c.cfg.Capacity == nil || s.targetPods == nil {
		return
	}
	waiting, message := s.c.cfg.Capacity(s.a.Namespace, s.targetPods)
	cond := hpa.Condition{Type: ConditionWaitingForCapacity, Status: corev1.ConditionFalse, Reason: "NoReplicaWaits",
		Message: "every replica has a node"}
	if waiting > 0 {
		cond = hpa.Condition{Type: ConditionWaitingForCapacity, Status: corev1.ConditionTrue, Reason: "NodesComing", Message: message}
	}
	s.setConditions(cond)
}

// run decides and acts; it fills s.status and s.history as Kubernetes
// fills the HPA status in each outcome.
func (s *syncRun) run(ctx context.Context) error {
	a := s.a
	generation := a.Generation
	s.status.ObservedGeneration = &generation
	if a.SpecErr == nil {
		s.c.invalid.forget(s.c.cfg.Observer, a.Key)
	} else {
		s.c.invalid.report(s.logger, s.c.cfg.Observer, a.Key, a.SpecReason, a.SpecErr.Error())
		s.errLabel = errorSpec
		s.event(corev1.EventTypeWarning, a.SpecReason, a.SpecErr.Error())
		s.setConditions(hpa.Condition{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionFalse,
			Reason: a.SpecReason, Message: a.SpecErr.Error()})
		return nil
	}
	spec := hpa.DefaultSpec(a.Spec)
	s.ref = fmt.Sprintf("%s/%s/%s", spec.ScaleTargetRef.Kind, a.Namespace, spec.ScaleTargetRef.Name)
	if held, err := s.ambiguousOwner(spec.ScaleTargetRef); held {
		return err
	}

	sc, gr, err := s.c.cfg.Scales.Get(ctx, a.Namespace, spec.ScaleTargetRef)
	if err != nil {
		s.event(corev1.EventTypeWarning, EventFailedGetScale, err.Error())
		s.setConditions(hpa.FailedGetScaleCondition(err))
		return fmt.Errorf("failed to query scale subresource for %s: %w", s.ref, err)
	}
	current := sc.Spec.Replicas
	in := hpa.ReconcileInput{
		Spec: spec, Watermarks: a.Watermarks, History: a.History,
		Snapshot:   hpa.Snapshot{Now: s.now, SpecReplicas: current, StatusReplicas: sc.Status.Replicas},
		Floor:      hpa.ScheduleFloor(a.Schedules, s.now),
		Activation: a.Activation, ScaleToZero: a.ScaleToZero,
	}
	if needsMetrics(in) {
		sel, pods, cond, err := s.pods(sc.Status.Selector)
		if err != nil {
			// As Kubernetes: no metric is computed and nothing scales.
			s.errLabel = errorSpec
			s.history = hpa.SeedRecommendation(a.History, current, s.now)
			s.setConditions(hpa.Condition{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue,
				Reason: hpa.ReasonSucceededGetScale, Message: "the HPA controller was able to get the target's current scale"}, cond)
			s.setMetrics(current, s.status.DesiredReplicas, nil)
			s.event(corev1.EventTypeWarning, EventFailedComputeMetricsReplicas, err.Error())
			return nil
		}
		in.Pods, s.targetPods = pods, pods
		in.Data = s.fetch(ctx, spec.Metrics, sel, pods, atZero(in))
	}

	d := hpa.Reconcile(s.c.cfg.HPA, in)
	s.history = d.History
	for _, f := range d.Failures {
		s.event(corev1.EventTypeWarning, f.Reason, f.Err.Error())
		s.c.cfg.Observer.metricFailed(string(spec.Metrics[f.Index].Type))
	}
	if d.Err != nil {
		s.errLabel = errorMetrics
		s.logger.V(2).Info("Metrics failed", "scaleTarget", s.ref, "err", d.Err)
	}
	var rescaleErr error
	switch {
	case d.DesiredReplicas == -1:
		msg := "no replica count could be computed"
		if d.Err != nil {
			msg = d.Err.Error()
		}
		s.event(corev1.EventTypeWarning, EventFailedComputeMetricsReplicas, msg)
	case d.Rescale && s.c.cfg.DryRun:
		s.wouldRescale(current, d)
	case s.c.cfg.DryRun:
		// No rescale wanted now: the next one is new.
		s.c.wanted.forget(a.Key)
	case d.Rescale:
		s.beforeScaleDown(ctx, Rescale{Autoscaler: a.Ref, Namespace: a.Namespace, Target: spec.ScaleTargetRef,
			From: current, To: d.DesiredReplicas, Selector: sc.Status.Selector})
		rescaleErr = s.rescale(ctx, a.Namespace, spec.ScaleTargetRef, gr, sc, d.DesiredReplicas)
		s.rescaled(ctx, spec, current, d, rescaleErr)
	}
	s.status = d.Status(s.status, current, s.now, rescaleErr)
	if rescaleErr != nil {
		return fmt.Errorf("failed to rescale %s: %w", s.ref, rescaleErr)
	}
	return nil
}

// rescaled reports a PUT of /scale: its event and, when it succeeded, the
// scale event in the history, the action label, the log line and the hook
// (last, as it calls into the node loop).
func (s *syncRun) rescaled(ctx context.Context, spec autoscalingv2.HorizontalPodAutoscalerSpec, current int32, d hpa.Decision, err error) {
	if err != nil {
		s.event(corev1.EventTypeWarning, EventFailedRescale,
			fmt.Sprintf("New size: %d; reason: %s; error: %v", d.DesiredReplicas, d.Reason, err))
		return
	}
	s.history = hpa.RecordScaleEvent(s.history, spec.Behavior, current, d.DesiredReplicas, s.now)
	s.action = actionScaleUp
	if d.DesiredReplicas < current {
		s.action = actionScaleDown
	}
	s.event(corev1.EventTypeNormal, EventSuccessfulRescale, fmt.Sprintf("New size: %d; reason: %s", d.DesiredReplicas, d.Reason))
	s.logger.Info("Rescaled", "scaleTarget", s.ref, "from", current, "to", d.DesiredReplicas, "reason", d.Reason)
	if hook := s.c.cfg.OnRescale; hook != nil {
		hook(ctx, Rescale{Autoscaler: s.a.Ref, Namespace: s.a.Namespace, Target: spec.ScaleTargetRef, From: current, To: d.DesiredReplicas})
	}
}

// beforeScaleDown writes the deletion costs for a scale-down. Their
// failure only makes the choice of replicas worse, not the scale-down
// wrong: it is logged and the write goes on.
func (s *syncRun) beforeScaleDown(ctx context.Context, r Rescale) {
	hook := s.c.beforeScaleDown
	if hook == nil || r.To >= r.From {
		return
	}
	if err := hook(ctx, r); err != nil {
		s.logger.Error(err, "Choosing the replicas to remove failed; scaling down all the same", "scaleTarget", s.ref, "from", r.From, "to", r.To)
	}
}

// needsMetrics reports whether Reconcile will look at metrics: a current
// count of zero disables scaling (unless the autoscaler may scale to zero:
// then its activation metrics are read), one outside [min, max] is clamped.
func needsMetrics(in hpa.ReconcileInput) bool {
	current, minReplicas := in.SpecReplicas, hpa.EffectiveMinReplicas(in.Spec, in.Floor)
	if current == 0 && !atZero(in) {
		return false
	}
	return current <= in.Spec.MaxReplicas && current >= minReplicas
}

// atZero reports whether the sync reads only the activation metrics: the
// workload is at zero and may stay there.
func atZero(in hpa.ReconcileInput) bool {
	return in.SpecReplicas == 0 && in.ScaleToZero && hpa.ScaleToZeroEnabled(in.Spec)
}

// pods parses the scale's selector, checks that no other autoscaler selects
// the same pods, and lists them. On failure it returns the ScalingActive
// condition and the error Kubernetes reports.
func (s *syncRun) pods(selector string) (labels.Selector, []*corev1.Pod, hpa.Condition, error) {
	a := s.a
	if selector == "" {
		s.event(corev1.EventTypeWarning, EventSelectorRequired, "selector is required")
		return nil, nil, hpa.InvalidSelectorCondition("the HPA target's scale is missing a selector"), errors.New("selector is required")
	}
	sel, err := labels.Parse(selector)
	if err != nil {
		msg := fmt.Sprintf("couldn't convert selector into a corresponding internal selector object: %v", err)
		s.event(corev1.EventTypeWarning, EventInvalidSelector, msg)
		return nil, nil, hpa.InvalidSelectorCondition(msg), errors.New(msg)
	}
	s.c.selectors.set(a.Key, a.Namespace, sel)
	pods, err := s.c.cfg.Pods.List(a.Namespace, sel)
	if err != nil {
		return nil, nil, hpa.InvalidSelectorCondition(err.Error()), err
	}
	if others := s.c.selectors.others(a.Key, a.Namespace, pods); len(others) > 0 {
		msg := fmt.Sprintf("pods by selector %v are controlled by multiple autoscalers: [%s]", selector,
			strings.Join(append([]string{a.Key}, others...), " "))
		s.event(corev1.EventTypeWarning, EventAmbiguousSelector, msg)
		return nil, nil, hpa.AmbiguousSelectorCondition(msg), errors.New(msg)
	}
	return sel, pods, hpa.Condition{}, nil
}

// fetch reads every metric, in spec order; at zero replicas only the
// activation (Object and External) metrics.
func (s *syncRun) fetch(ctx context.Context, specs []autoscalingv2.MetricSpec, sel labels.Selector, pods []*corev1.Pod, zero bool) []hpa.MetricData {
	out := make([]hpa.MetricData, len(specs))
	for i, m := range specs {
		if zero && !hpa.IsActivationMetric(m) {
			continue
		}
		out[i] = s.c.cfg.Metrics.Fetch(ctx, metrics.Request{
			Namespace: s.a.Namespace, Autoscaler: s.a.Name, Selector: sel, Pods: pods, Metric: m, Now: s.now,
		})
	}
	return out
}

// rescale writes the desired count to /scale; on a conflict it reads the
// scale again and retries.
func (s *syncRun) rescale(ctx context.Context, ns string, ref autoscalingv2.CrossVersionObjectReference, gr schema.GroupResource, sc *autoscalingv1.Scale, desired int32) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sc.Spec.Replicas = desired
		_, err := s.c.cfg.Scales.Update(ctx, ns, gr, sc)
		if err == nil || !apierrors.IsConflict(err) {
			return err
		}
		if latest, _, gerr := s.c.cfg.Scales.Get(ctx, ns, ref); gerr == nil {
			sc = latest
		}
		return err
	})
}

// setConditions applies conditions to the status being built.
func (s *syncRun) setConditions(conds ...hpa.Condition) {
	s.status.Conditions = hpa.ApplyConditions(s.status.Conditions, conds, metav1.NewTime(s.now.Truncate(time.Second)))
}

// setMetrics sets the replica counts and the metric statuses.
func (s *syncRun) setMetrics(current, desired int32, statuses []autoscalingv2.MetricStatus) {
	s.status.CurrentReplicas, s.status.DesiredReplicas, s.status.CurrentMetrics = current, desired, statuses
}

// event records an event on the autoscaler.
func (s *syncRun) event(eventType, reason, message string) {
	s.c.cfg.Recorder.Event(s.a.Ref, eventType, reason, message)
}

// compactHistory keeps, of the recommendations with equal replica counts,
// only the newest, oldest first. No stabilization outcome changes: a window
// that holds an older entry holds the newer one of the same count too. It
// keeps the persisted history small, and a re-sync within the same second
// from writing a status that did not change.
func compactHistory(h hpa.History) hpa.History {
	if len(h.Recommendations) < 2 {
		return h
	}
	newest := make(map[int32]metav1.Time, len(h.Recommendations))
	for _, r := range h.Recommendations {
		if t, ok := newest[r.Replicas]; !ok || r.Timestamp.After(t.Time) {
			newest[r.Replicas] = r.Timestamp
		}
	}
	if len(newest) == len(h.Recommendations) {
		return h
	}
	recs := make([]hpa.Recommendation, 0, len(newest))
	for _, r := range h.Recommendations {
		if t, ok := newest[r.Replicas]; ok && t.Equal(&r.Timestamp) {
			recs = append(recs, r)
			delete(newest, r.Replicas)
		}
	}
	slices.SortStableFunc(recs, func(a, b hpa.Recommendation) int { return a.Timestamp.Time.Compare(b.Timestamp.Time) })
	h.Recommendations = recs
	return h
}

// wouldRescale records, in shadow mode, the rescale the sync would have
// written: the event the write would have recorded, a log line and the
// metrics. The history is not changed: it is the acting autoscaler's.
func (s *syncRun) wouldRescale(current int32, d hpa.Decision) {
	s.c.cfg.Observer.dryRunDesired(s.a.Namespace, s.a.Name, d.DesiredReplicas)
	if !s.c.wanted.changed(s.a.Key, d.DesiredReplicas) {
		// The same decision as at the last sync: nothing acted on it.
		return
	}
	s.event(corev1.EventTypeNormal, EventSuccessfulRescale, fmt.Sprintf("New size: %d; reason: %s (dry run: not written)", d.DesiredReplicas, d.Reason))
	s.logger.Info("Dry run: would rescale", "scaleTarget", s.ref, "from", current, "to", d.DesiredReplicas, "reason", d.Reason)
	s.c.cfg.Observer.dryRunRescale(s.a.Namespace, s.a.Name, d.DesiredReplicas)
}
