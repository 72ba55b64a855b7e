package hpa

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Cases where tidal once decided otherwise than Kubernetes v1.36.3. Each is
// run through upstream's controller too, so the expected answer is
// upstream's, not a belief about it.

// regressionCase is a case with the answer upstream's first reconcile gives.
type regressionCase struct {
	name string
	// downscaleWindow is --horizontal-pod-autoscaler-downscale-stabilization.
	downscaleWindow time.Duration
	json            string
	// desired is status.desiredReplicas, and rescale whether /scale is written.
	desired int32
	rescale bool
	// conditions are "Type=Status Reason", in status order.
	conditions []string
}

var upstreamRegressions = []regressionCase{{
	name:            "a new autoscaler with a 0s scale-up window scales up on its first sync",
	downscaleWindow: 5 * time.Minute,
	json: `{"hpa": {"spec": {"maxReplicas": 10,
	  "metrics": [{"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "10"}}}],
	  "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}},
	 "currentReplicas": 1, "metrics": [{"values": ["30"]}]}`,
	desired: 3, rescale: true,
	conditions: []string{"AbleToScale=True SucceededRescale", "ScalingActive=True ValidMetricFound", "ScalingLimited=False DesiredWithinRange"},
}, {
	name:            "a new autoscaler with a 0s downscale window scales down on its first sync",
	downscaleWindow: 0,
	json: `{"hpa": {"spec": {"maxReplicas": 10,
	  "metrics": [{"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "10"}}}]}},
	 "currentReplicas": 4, "metrics": [{"values": ["10"]}]}`,
	desired: 1, rescale: true,
	conditions: []string{"AbleToScale=True SucceededRescale", "ScalingActive=True ValidMetricFound", "ScalingLimited=False DesiredWithinRange"},
}, {
	name:            "a negative metric proposing -1 scales to minReplicas",
	downscaleWindow: 0,
	json: `{"hpa": {"spec": {"maxReplicas": 20,
	  "metrics": [{"type": "Object", "object": {"describedObject": {"apiVersion": "v1", "kind": "Service", "name": "web"},
	    "metric": {"name": "backlog"}, "target": {"type": "AverageValue", "averageValue": "1"}}}]}},
	 "currentReplicas": 10, "metrics": [{"value": "-1"}]}`,
	desired: 1, rescale: true,
	conditions: []string{"AbleToScale=True SucceededRescale", "ScalingActive=True ValidMetricFound", "ScalingLimited=True TooFewReplicas"},
}, {
	name:            "a negative metric and a failed one: no decision",
	downscaleWindow: 0,
	json: `{"hpa": {"spec": {"maxReplicas": 20, "metrics": [
	   {"type": "Object", "object": {"describedObject": {"apiVersion": "v1", "kind": "Service", "name": "web"},
	    "metric": {"name": "backlog"}, "target": {"type": "AverageValue", "averageValue": "1"}}},
	   {"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "Value", "value": "10"}}}]},
	  "status": {"desiredReplicas": 7}},
	 "currentReplicas": 10, "metrics": [{"value": "-1"}, {"failed": true}]}`,
	desired: 7, rescale: false,
	conditions: []string{"AbleToScale=True SucceededGetScale", "ScalingActive=False FailedGetExternalMetric"},
}, {
	name:            "a rescale removes ScaledToZero",
	downscaleWindow: 5 * time.Minute,
	json: `{"hpa": {"spec": {"maxReplicas": 10,
	  "metrics": [{"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "10"}}}]},
	  "status": {"conditions": [{"type": "ScaledToZero", "status": "True", "reason": "ScaledToZero", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}},
	 "currentReplicas": 2, "metrics": [{"values": ["60"]}]}`,
	desired: 4, rescale: true,
	conditions: []string{"AbleToScale=True SucceededRescale", "ScalingActive=True ValidMetricFound", "ScalingLimited=True ScaleUpLimit"},
}, {
	name:            "zero replicas remove ScaledToZero",
	downscaleWindow: 5 * time.Minute,
	json: `{"hpa": {"spec": {"maxReplicas": 10,
	  "metrics": [{"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "10"}}}]},
	  "status": {"conditions": [{"type": "ScaledToZero", "status": "False", "reason": "NotScaledToZero", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}},
	 "currentReplicas": 0, "metrics": [{"values": ["60"]}]}`,
	desired: 0, rescale: false,
	conditions: []string{"AbleToScale=True SucceededGetScale", "ScalingActive=False ScalingDisabled"},
}, {
	name:            "no rescale keeps ScaledToZero",
	downscaleWindow: 5 * time.Minute,
	json: `{"hpa": {"spec": {"maxReplicas": 10,
	  "metrics": [{"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "10"}}}]},
	  "status": {"conditions": [{"type": "ScaledToZero", "status": "True", "reason": "ScaledToZero", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}},
	 "currentReplicas": 3, "metrics": [{"values": ["30"]}]}`,
	desired: 3, rescale: false,
	conditions: []string{"ScaledToZero=True ScaledToZero", "AbleToScale=True ReadyForNewScale", "ScalingActive=True ValidMetricFound", "ScalingLimited=False DesiredWithinRange"},
}}

func TestUpstreamRegressions(t *testing.T) {
	byWindow := map[time.Duration][]regressionCase{}
	for _, rc := range upstreamRegressions {
		byWindow[rc.downscaleWindow] = append(byWindow[rc.downscaleWindow], rc)
	}
	for window, rcs := range byWindow {
		cfg := DefaultConfig()
		cfg.DownscaleStabilizationWindow = window
		outcomes := compareWithUpstream(t, cfg, len(rcs), func(i int, _ time.Time) reconcileCase { return parseCase(t, rcs[i].json) })
		for i, o := range outcomes {
			rc := rcs[i]
			if err := rc.check(o.Upstream); err != "" {
				t.Errorf("%s: upstream's answer is not the expected one (the case is wrong): %s", rc.name, err)
			}
			if err := rc.check(o.Ours); err != "" {
				t.Errorf("%s: %s\n\tcase: %s", rc.name, err, rc.json)
			}
			if d := o.Upstream.diff(o.Ours); d != nil {
				t.Errorf("%s: upstream and tidal differ:\n%s", rc.name, strings.Join(d, "\n"))
			}
		}
	}
}

// check returns what in f differs from the expected answer ("" if nothing).
func (rc regressionCase) check(f *firstReconcile) string {
	var conds []string
	for _, c := range f.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s %s", c.Type, c.Status, c.Reason))
	}
	got, want := strings.Join(conds, ", "), strings.Join(rc.conditions, ", ")
	if f.Status.DesiredReplicas != rc.desired || f.Rescaled != rc.rescale || got != want {
		return fmt.Sprintf("desired %d (rescale %v), conditions %s; want %d (rescale %v), %s",
			f.Status.DesiredReplicas, f.Rescaled, got, rc.desired, rc.rescale, want)
	}
	return ""
}
