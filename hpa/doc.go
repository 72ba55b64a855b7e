// Package hpa is tidal's pure calculation core for horizontal pod
// autoscaling.
//
// It reproduces the replica arithmetic of the Kubernetes v1.36 horizontal pod
// autoscaler controller (pkg/controller/podautoscaler) as plain functions over
// plain data, and adds tidal's dual watermarks. Nothing here talks to an API
// server, reads a clock or keeps state between calls: the caller fetches pods,
// metrics and the /scale subresource, passes the current time in, and persists
// the History it gets back.
//
// A controller typically does, once per sync period and per autoscaler:
//
//	d := hpa.Reconcile(cfg, hpa.ReconcileInput{...})
//	if d.Rescale {
//		// PUT /scale with d.DesiredReplicas; on success:
//		d.History = hpa.RecordScaleEvent(d.History, spec.Behavior, current, d.DesiredReplicas, now)
//	}
//	// write status: d.MetricStatuses, d.Conditions, d.History
//
// The layers below Reconcile are exported too: per-metric-type calculations
// (ResourceUtilizationReplicas, PlainReplicas, ObjectValueReplicas, ...), the
// combination of several metrics (ComputeReplicasForMetrics), and the two
// normalizations (NormalizeDesiredReplicas, NormalizeDesiredReplicasWithBehavior).
//
// All metric quantities are int64 milli-units, as Kubernetes uses them
// (Quantity.MilliValue; memory is therefore in milli-bytes).
package hpa
