package hpa

import (
	"math"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// rules mirrors upstream's generateScalingRules: selectPolicy Max, a Pods
// policy when pods != 0, a Percent policy when percent != 0.
func rules(pods, podsPeriod, percent, percentPeriod, window int32) *autoscalingv2.HPAScalingRules {
	sel := autoscalingv2.MaxChangePolicySelect
	r := &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &window, SelectPolicy: &sel}
	if pods != 0 {
		r.Policies = append(r.Policies, autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: pods, PeriodSeconds: podsPeriod})
	}
	if percent != 0 {
		r.Policies = append(r.Policies, autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: percent, PeriodSeconds: percentPeriod})
	}
	return r
}

// uniformEvents mirrors upstream's generateEventsUniformDistribution,
// including its truncation of each offset to whole seconds: events sit in the
// middle of equal segments of the last period.
func uniformEvents(changes []int32, periodSeconds int) []ScaleEvent {
	out := make([]ScaleEvent, len(changes))
	seg := float64(periodSeconds) / float64(len(changes))
	for i, c := range changes {
		offset := time.Duration(float64(periodSeconds) - seg*float64(i+1) + seg/2)
		out[i] = ScaleEvent{ReplicaChange: c, Timestamp: mtime(-time.Second * offset)}
	}
	return out
}

// TestScalingWithRules ports every row of upstream's table, including the
// row upstream skips (testThis), with its production expectation.
func TestScalingWithRules(t *testing.T) {
	ev := uniformEvents
	tests := []struct {
		name               string
		up, down           []ScaleEvent
		min, max           int32
		upRules, downRules *autoscalingv2.HPAScalingRules
		current, desired   int32
		want               int32
		reason             string
	}{
		{name: "prenormalized desired replicas within range", current: 5, desired: 7, min: 3, max: 8, want: 7, reason: ReasonDesiredWithinRange},
		{name: "prenormalized desired replicas < minReplicas", current: 3, desired: 1, min: 2, max: 8, want: 2, reason: ReasonTooFewReplicas},
		{name: "within range when minReplicas is 0", current: 1, desired: 0, min: 0, max: 10, want: 0, reason: ReasonDesiredWithinRange},
		{name: "maxReplicas < scaleUpLimit", current: 20, desired: 1000, min: 1, max: 10, want: 10, reason: ReasonTooManyReplicas},
		{name: "desired replica count is more than the maximum replica count", current: 100, desired: 1000, min: 100, max: 150, want: 150, reason: ReasonTooManyReplicas},
		{name: "scaleUpLimit < maxReplicas with user policies", current: 3, desired: 1000, min: 1, max: 2000, upRules: rules(0, 0, 1, 60, 0), want: 4, reason: ReasonScaleUpLimit},
		{name: "skipped upstream (testThis): scaleDownLimit > minReplicas", current: 1000, desired: 3, min: 3, max: 2000, downRules: rules(20, 60, 0, 0, 0), want: 980, reason: ReasonScaleDownLimit},
		{name: "scaleUp with default behavior", min: 1, max: 1000, current: 10, desired: 50, want: 20, reason: ReasonScaleUpLimit},
		{name: "scaleUp with pods policy larger than percent policy", min: 1, max: 1000, upRules: rules(100, 60, 100, 60, 0), current: 10, desired: 500, want: 110, reason: ReasonScaleUpLimit},
		{name: "scaleUp with percent policy larger than pods policy", min: 1, max: 1000, upRules: rules(2, 60, 100, 60, 0), current: 10, desired: 500, want: 20, reason: ReasonScaleUpLimit},
		{name: "scaleUp with spec MaxReplicas limitation with large pod policy", min: 1, max: 1000, upRules: rules(100, 60, 0, 0, 0), current: 10, desired: 50, want: 50, reason: ReasonDesiredWithinRange},
		{name: "scaleUp with spec MaxReplicas limitation with large percent policy", min: 1, max: 1000, upRules: rules(10000, 60, 0, 0, 0), current: 10, desired: 50, want: 50, reason: ReasonDesiredWithinRange},
		{name: "scaleUp with pod policy limitation", min: 1, max: 1000, upRules: rules(30, 60, 0, 0, 0), current: 10, desired: 50, want: 40, reason: ReasonScaleUpLimit},
		{name: "scaleUp with percent policy limitation", min: 1, max: 1000, upRules: rules(0, 0, 200, 60, 0), current: 10, desired: 50, want: 30, reason: ReasonScaleUpLimit},
		{name: "scaleDown with percent policy larger than pod policy", min: 1, max: 1000, downRules: rules(20, 60, 1, 60, 300), current: 100, desired: 2, want: 80, reason: ReasonScaleDownLimit},
		{name: "scaleDown with pod policy larger than percent policy", min: 1, max: 1000, downRules: rules(2, 60, 1, 60, 300), current: 100, desired: 2, want: 98, reason: ReasonScaleDownLimit},
		{name: "scaleDown with spec MinReplicas=nil limitation with large pod policy", min: 1, max: 1000, downRules: rules(100, 60, 0, 0, 300), current: 10, desired: 0, want: 1, reason: ReasonTooFewReplicas},
		{name: "scaleDown with spec MinReplicas limitation with large percent policy", min: 5, max: 1000, downRules: rules(0, 0, 100, 60, 300), current: 10, desired: 2, want: 5, reason: ReasonTooFewReplicas},
		{name: "scaleDown with pod policy limitation", min: 1, max: 1000, downRules: rules(5, 60, 0, 0, 300), current: 10, desired: 2, want: 5, reason: ReasonScaleDownLimit},
		{name: "scaleDown with percent policy limitation", min: 1, max: 1000, downRules: rules(0, 0, 50, 60, 300), current: 10, desired: 5, want: 5, reason: ReasonDesiredWithinRange},
		{name: "scaleUp with spec MaxReplicas limitation with large pod policy and events", up: ev([]int32{1, 5, 9}, 120), min: 1, max: 200, upRules: rules(300, 60, 0, 0, 0), current: 100, desired: 500, want: 200, reason: ReasonTooManyReplicas},
		{name: "scaleUp with spec MaxReplicas limitation with large percent policy and events", up: ev([]int32{1, 5, 9}, 120), min: 1, max: 200, upRules: rules(0, 0, 10000, 60, 0), current: 100, desired: 500, want: 200, reason: ReasonTooManyReplicas},
		{name: "scaleUp with currentReplicas limitation with a lot of recent scale up events", up: ev([]int32{1, 5, 9}, 120), min: 1, max: 1000, upRules: rules(5, 120, 0, 0, 0), current: 100, desired: 500, want: 100, reason: ReasonScaleUpLimit},
		{name: "scaleUp with pod policy and previous scale up events", up: ev([]int32{1, 5, 9}, 120), min: 1, max: 1000, upRules: rules(150, 120, 0, 0, 0), current: 100, desired: 500, want: 235, reason: ReasonScaleUpLimit},
		{name: "scaleUp with percent policy and previous scale up events", up: ev([]int32{1, 5, 9}, 120), min: 1, max: 1000, upRules: rules(0, 0, 200, 120, 0), current: 100, desired: 500, want: 255, reason: ReasonScaleUpLimit},
		{name: "scaleUp with percent policy and previous scale up and down events", up: ev([]int32{4}, 120), down: ev([]int32{2}, 120), min: 1, max: 1000, upRules: rules(0, 0, 300, 300, 0), current: 6, desired: 24, want: 16, reason: ReasonScaleUpLimit},
		{name: "scaleDown with default policy and previous events", down: ev([]int32{1, 5, 9}, 120), min: 1, max: 1000, current: 10, desired: 5, want: 5, reason: ReasonDesiredWithinRange},
		{name: "scaleDown with spec MinReplicas=nil limitation with large pod policy and previous events", down: ev([]int32{1, 5, 9}, 120), min: 1, max: 1000, downRules: rules(115, 120, 0, 0, 300), current: 100, desired: 0, want: 1, reason: ReasonTooFewReplicas},
		{name: "scaleDown with spec MinReplicas limitation with large pod policy and previous events", down: ev([]int32{1, 5, 9}, 120), min: 5, max: 1000, downRules: rules(130, 120, 0, 0, 300), current: 100, desired: 0, want: 5, reason: ReasonTooFewReplicas},
		{name: "scaleDown with spec MinReplicas limitation with large percent policy and previous events", down: ev([]int32{1, 5, 9}, 120), min: 5, max: 1000, downRules: rules(0, 0, 100, 120, 300), current: 100, desired: 2, want: 5, reason: ReasonTooFewReplicas},
		{name: "scaleDown with pod policy limitation and previous events", down: ev([]int32{1, 5, 9}, 120), min: 1, max: 1000, downRules: rules(5, 120, 0, 0, 300), current: 100, desired: 2, want: 100, reason: ReasonScaleDownLimit},
		{name: "scaleDown with percent policy limitation and previous events", down: ev([]int32{2, 4, 6}, 120), min: 1, max: 1000, downRules: rules(0, 0, 50, 120, 300), current: 100, desired: 0, want: 56, reason: ReasonScaleDownLimit},
		{name: "scaleDown with percent policy and previous scale up and down events", up: ev([]int32{2}, 120), down: ev([]int32{4}, 120), min: 1, max: 1000, downRules: rules(0, 0, 50, 180, 0), current: 10, desired: 1, want: 6, reason: ReasonScaleDownLimit},
		{name: "scaleDown with previous events preventing further scale down", down: ev([]int32{10, 10, 10}, 120), min: 1, max: 1000, downRules: rules(0, 0, 10, 120, 300), current: 100, desired: 0, want: 100, reason: ReasonScaleDownLimit},
		{name: "scaleDown with previous events still allowing more scale down", down: ev([]int32{10, 10, 10}, 120), min: 1, max: 1000, downRules: rules(0, 0, 1000, 120, 300), current: 10, desired: 5, want: 5, reason: ReasonDesiredWithinRange},
		{name: "check 'outdated' flag for events for one behavior for up", up: ev([]int32{8, 12, 9, 11}, 120), min: 1, max: 1000, upRules: rules(1000, 60, 0, 0, 0), current: 100, desired: 200, want: 200, reason: ReasonDesiredWithinRange},
		{name: "events not marked 'outdated' for two different policies for up", up: ev([]int32{8, 12, 9, 11}, 120), min: 1, max: 1000, upRules: rules(1000, 120, 100, 60, 0), current: 100, desired: 200, want: 200, reason: ReasonDesiredWithinRange},
		{name: "events marked 'outdated' for two different policies for up", up: ev([]int32{8, 12, 9, 11}, 120), min: 1, max: 1000, upRules: rules(1000, 30, 100, 60, 0), current: 100, desired: 200, want: 200, reason: ReasonDesiredWithinRange},
		{name: "check 'outdated' flag for events for one behavior for down", down: ev([]int32{8, 12, 9, 11}, 120), min: 1, max: 1000, downRules: rules(1000, 60, 0, 0, 300), current: 100, desired: 5, want: 5, reason: ReasonDesiredWithinRange},
		{name: "events not marked 'outdated' for two different policies for down", down: ev([]int32{8, 12, 9, 11}, 120), min: 1, max: 1000, downRules: rules(1000, 120, 100, 60, 300), current: 100, desired: 5, want: 5, reason: ReasonDesiredWithinRange},
		{name: "events marked 'outdated' for two different policies for down", down: ev([]int32{8, 12, 9, 11}, 120), min: 1, max: 1000, downRules: rules(1000, 30, 100, 60, 300), current: 100, desired: 5, want: 5, reason: ReasonDesiredWithinRange},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := DefaultBehavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: tc.upRules, ScaleDown: tc.downRules}, 5*time.Minute)
			h := History{ScaleUpEvents: tc.up, ScaleDownEvents: tc.down}
			got := ConvertDesiredReplicasWithBehaviorRate(h, Step{Current: tc.current, Proposal: tc.desired, Min: tc.min, Max: tc.max, Now: epoch()}, b.ScaleUp, b.ScaleDown)
			if got.Replicas != tc.want || got.Reason != tc.reason {
				t.Fatalf("got %d %s, want %d %s", got.Replicas, got.Reason, tc.want, tc.reason)
			}
		})
	}
}

// TestScaleLimitsWithMinSelect ports TestCalculateScaleUp/DownLimitWithScalingRules.
func TestScaleLimitsWithMinSelect(t *testing.T) {
	sel := autoscalingv2.MinChangePolicySelect
	r := rules(2, 60, 50, 60, 300)
	r.SelectPolicy = &sel
	if got := ScaleUpLimit(1, History{}, r, epoch()); got != 2 {
		t.Errorf("scale-up limit %d, want 2", got)
	}
	if got := ScaleDownLimit(5, History{}, r, epoch()); got != 3 {
		t.Errorf("scale-down limit %d, want 3", got)
	}
}

// TestDocRateLimitExample: 80 -> 10 with [4 Pods/60s, 10 Percent/60s].
func TestDocRateLimitExample(t *testing.T) {
	down := func(sel autoscalingv2.ScalingPolicySelect) *autoscalingv2.HPAScalingRules {
		r := rules(4, 60, 10, 60, 0)
		r.SelectPolicy = &sel
		return r
	}
	limit := func(current int32, h History, sel autoscalingv2.ScalingPolicySelect) Limit {
		b := DefaultBehavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: down(sel)}, 0)
		return ConvertDesiredReplicasWithBehaviorRate(h, Step{Current: current, Proposal: 10, Min: 1, Max: 100, Now: epoch()}, b.ScaleUp, b.ScaleDown)
	}
	eventAgo := func(d time.Duration) History {
		return History{ScaleDownEvents: []ScaleEvent{{ReplicaChange: 8, Timestamp: mtime(-d)}}}
	}
	tests := []struct {
		name    string
		current int32
		h       History
		sel     autoscalingv2.ScalingPolicySelect
		want    int32
	}{
		{"Max: min(76, 72)", 80, History{}, autoscalingv2.MaxChangePolicySelect, 72},
		{"next step once the event is a minute old", 72, eventAgo(time.Minute), autoscalingv2.MaxChangePolicySelect, 64},
		{"next step while the event is 30s old", 72, eventAgo(30 * time.Second), autoscalingv2.MaxChangePolicySelect, 72},
		{"30 replicas: min(26, 27)", 30, History{}, autoscalingv2.MaxChangePolicySelect, 26},
		{"Min: max(76, 72)", 80, History{}, autoscalingv2.MinChangePolicySelect, 76},
		{"Disabled", 80, History{}, autoscalingv2.DisabledPolicySelect, 80},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := limit(tc.current, tc.h, tc.sel)
			if got.Replicas != tc.want || got.Reason != ReasonScaleDownLimit {
				t.Fatalf("got %+v, want %d ScaleDownLimit", got, tc.want)
			}
		})
	}
}

// TestFloatHazards pins the float arithmetic of the percent policies.
func TestFloatHazards(t *testing.T) {
	pct := func(v int32) *autoscalingv2.HPAScalingRules { return rules(0, 0, v, 60, 0) }
	if got := ScaleDownLimit(5, History{}, pct(80), epoch()); got != 0 {
		t.Errorf("int32(5*(1-0.80)) = %d, want 0 (exact math gives 1)", got)
	}
	if got := ScaleUpLimit(25, History{}, pct(12), epoch()); got != 29 {
		t.Errorf("ceil(25*(1+0.12)) = %d, want 29 (exact math gives 28)", got)
	}
	// The doc's census: over 0..2000 replicas and 1..1000 percent, 4766
	// scale-up and 1304 scale-down pairs differ from exact integer math
	// (counts below zero clamped to zero).
	upDiff, downDiff := 0, 0
	for v := int32(1); v <= 1000; v++ {
		r := pct(v)
		for x := int32(0); x <= 2000; x++ {
			if int64(ScaleUpLimit(x, History{}, r, epoch())) != (int64(x)*int64(100+v)+99)/100 {
				upDiff++
			}
			exact := max(int64(x)*int64(100-v)/100, 0)
			if max(int64(ScaleDownLimit(x, History{}, r, epoch())), 0) != exact {
				downDiff++
			}
		}
	}
	if upDiff != 4766 || downDiff != 1304 {
		t.Errorf("float/exact disagreements: %d up, %d down; want 4766 and 1304", upDiff, downDiff)
	}
}

// TestStabilizeWithBehavior ports upstream's TestNormalizeDesiredReplicasWithBehavior
// (windows default to 0 there, whatever its comments say).
func TestStabilizeWithBehavior(t *testing.T) {
	m := time.Minute
	tests := []struct {
		name              string
		recs              []Recommendation
		current, proposal int32
		upW, downW        time.Duration
		want              int32
		wantLog           []int32
	}{
		{"empty recommendations for scaling down", nil, 100, 5, 0, 0, 5, []int32{5}},
		{"simple scale down stabilization", recs(4, 2*m, 5, m), 100, 3, 0, 3 * m, 5, []int32{4, 5, 3}},
		{"simple scale up stabilization", recs(4, 2*m, 5, m), 1, 7, 5 * m, 0, 4, []int32{4, 5, 7}},
		{"no scale down stabilization", recs(1, 2*m, 2, m), 100, 3, 5 * m, 0, 3, []int32{1, 2, 3}},
		{"no scale up stabilization", recs(4, 2*m, 5, m), 1, 3, 0, 5 * m, 3, []int32{4, 5, 3}},
		{"no scale down stabilization, reuse recommendation element", recs(10, 10*m, 9, 9*m), 100, 3, 0, 0, 3, []int32{10, 3}},
		{"no scale up stabilization, reuse recommendation element", recs(10, 10*m, 9, 9*m), 1, 100, 0, 0, 100, []int32{10, 100}},
		{"scale down stabilization, reuse one of obsolete recommendation element", recs(10, 10*m, 4, m, 5, 2*m, 9, 9*m), 100, 3, 0, 3 * m, 5, []int32{10, 4, 5, 3}},
		{"scale up stabilization, reuse one of obsolete recommendation element", recs(10, 100*m, 6, m, 5, 2*m, 9, 3*m), 1, 100, 5 * m, 0, 5, []int32{100, 6, 5, 9}},
		{"do not scale up when prenormalized rec goes down", recs(2, 100*m, 3, 3*m), 2, 1, 5 * m, 5 * m, 2, []int32{1, 3}},
		{"do not scale down when prenormalized rec goes up", recs(2, 100*m, 1, 3*m), 2, 3, 5 * m, 5 * m, 2, []int32{3, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, log := StabilizeWithBehavior(tc.recs, tc.current, tc.proposal, tc.upW, tc.downW, epoch())
			if got != tc.want || !equalInt32(replicasOf(log), tc.wantLog) {
				t.Fatalf("got %d log %v, want %d log %v", got, replicasOf(log), tc.want, tc.wantLog)
			}
		})
	}
}

// TestNormalizeWithBehaviorConditions checks reasons and defaulting.
func TestNormalizeWithBehaviorConditions(t *testing.T) {
	b := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: int32p(120)}}
	h := History{Recommendations: recs(6, time.Minute)}
	// Up-stabilized to 6, then the default up policies (max(6+4, 12)) allow it.
	n := NormalizeDesiredReplicasWithBehavior(h, Step{Current: 5, Proposal: 30, Min: 1, Max: 50, Now: epoch()}, b, 5*time.Minute)
	if n.Stabilized != 6 || n.Replicas != 6 || n.AbleToScale.Reason != ReasonScaleUpStabilized || n.ScalingLimited.Status != v1.ConditionFalse {
		t.Fatalf("up: %+v", n)
	}
	// The scale-down window defaults to the flag (5m): 6 from a minute ago holds.
	n = NormalizeDesiredReplicasWithBehavior(h, Step{Current: 8, Proposal: 2, Min: 1, Max: 50, Now: epoch()}, b, 5*time.Minute)
	if n.Stabilized != 6 || n.Replicas != 6 || n.AbleToScale.Reason != ReasonScaleDownStabilized {
		t.Fatalf("down: %+v", n)
	}
	// Default up policies: 5 -> max(9, 10) = 10, ScaleUpLimit.
	n = NormalizeDesiredReplicasWithBehavior(History{}, Step{Current: 5, Proposal: 30, Min: 1, Max: 50, Now: epoch()}, &autoscalingv2.HorizontalPodAutoscalerBehavior{}, 0)
	if n.Replicas != 10 || n.ScalingLimited.Reason != ReasonScaleUpLimit || n.ScalingLimited.Status != v1.ConditionTrue || n.AbleToScale.Reason != ReasonReadyForNewScale {
		t.Fatalf("defaults: %+v", n)
	}
}

// TestDefaultBehavior checks field-by-field defaulting.
func TestDefaultBehavior(t *testing.T) {
	if DefaultBehavior(nil, time.Minute) != nil {
		t.Fatal("nil behavior must stay nil")
	}
	sel := autoscalingv2.MinChangePolicySelect
	tol := resource.MustParse("0.05")
	in := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{SelectPolicy: &sel, Tolerance: &tol}}
	b := DefaultBehavior(in, 90*time.Second)
	if *b.ScaleUp.StabilizationWindowSeconds != 0 || *b.ScaleUp.SelectPolicy != autoscalingv2.MaxChangePolicySelect || len(b.ScaleUp.Policies) != 2 ||
		b.ScaleUp.Policies[0] != (autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15}) ||
		b.ScaleUp.Policies[1] != (autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}) {
		t.Fatalf("scale-up defaults: %+v", b.ScaleUp)
	}
	if *b.ScaleDown.StabilizationWindowSeconds != 90 || *b.ScaleDown.SelectPolicy != sel || b.ScaleDown.Tolerance.Cmp(tol) != 0 ||
		len(b.ScaleDown.Policies) != 1 || b.ScaleDown.Policies[0] != (autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}) {
		t.Fatalf("scale-down defaults: %+v", b.ScaleDown)
	}
	if in.ScaleUp != nil || in.ScaleDown.StabilizationWindowSeconds != nil {
		t.Fatal("input behavior was modified")
	}
	// Setting policies replaces the whole default list.
	b = DefaultBehavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: rules(1, 10, 0, 0, 7)}, 0)
	if len(b.ScaleUp.Policies) != 1 || *b.ScaleUp.StabilizationWindowSeconds != 7 {
		t.Fatalf("policies not replaced: %+v", b.ScaleUp)
	}
	// Tolerances come from behavior per direction, else the flag.
	if got := TolerancesFor(0.1, in); got != (Tolerances{Up: 0.1, Down: 0.05}) {
		t.Fatalf("tolerances %+v", got)
	}
}

// TestRecordScaleEvent ports upstream's TestStoreScaleEvents for both
// directions (scale events are checked at 60s, as upstream does).
func TestRecordScaleEvent(t *testing.T) {
	ev := func(c int32, ago int, outdated bool) ScaleEvent {
		return ScaleEvent{ReplicaChange: c, Timestamp: mtime(-time.Duration(ago) * time.Second), Outdated: outdated}
	}
	type want struct {
		change   int32
		outdated bool
	}
	tests := []struct {
		name       string
		prev       []ScaleEvent
		rules      *autoscalingv2.HPAScalingRules
		wantEvents []want
		wantChange int32
	}{
		{"empty entries with default behavior", nil, nil, nil, 0},
		{"empty entries with two-policy-behavior", nil, rules(10, 60, 100, 60, 0), []want{{5, false}}, 0},
		{"one outdated entry to be kept untouched without behavior", []ScaleEvent{ev(7, 61, false)}, nil, []want{{7, false}}, 0},
		{"one outdated entry to be replaced with behavior", []ScaleEvent{ev(7, 61, false)}, rules(10, 60, 100, 60, 0), []want{{5, false}}, 0},
		{"one actual entry to be not touched with behavior", []ScaleEvent{ev(7, 58, false)}, rules(10, 60, 100, 60, 0), []want{{7, false}, {5, false}}, 7},
		{"two entries, one of them to be replaced", []ScaleEvent{ev(7, 61, false), ev(6, 59, false)}, rules(10, 60, 0, 0, 0), []want{{5, false}, {6, false}}, 6},
		{"replace one entry, use policies with different periods",
			[]ScaleEvent{ev(8, 29, false), ev(6, 59, false), ev(7, 61, false), ev(9, 61, false)}, rules(10, 60, 100, 30, 0),
			[]want{{8, false}, {6, false}, {7, true}, {5, false}}, 14},
		{"two entries, both actual", []ScaleEvent{ev(7, 58, false), ev(6, 59, false)}, rules(10, 120, 100, 30, 0),
			[]want{{7, false}, {6, false}, {5, false}}, 13},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, up := range []bool{true, false} {
				var b *autoscalingv2.HorizontalPodAutoscalerBehavior
				if tc.rules != nil {
					b = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: tc.rules}
					if up {
						b = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: tc.rules}
					}
				}
				h, next := History{ScaleDownEvents: tc.prev}, int32(5)
				if up {
					h, next = History{ScaleUpEvents: tc.prev}, 15
				}
				list := func(h History) []ScaleEvent {
					if up {
						return h.ScaleUpEvents
					}
					return h.ScaleDownEvents
				}
				if got := ReplicasChangedInPeriod(list(h), time.Minute, epoch()); got != tc.wantChange {
					t.Fatalf("up=%v: change in period %d, want %d", up, got, tc.wantChange)
				}
				got := list(RecordScaleEvent(h, b, 10, next, epoch()))
				if tc.wantEvents == nil && got != nil {
					t.Fatalf("up=%v: events stored without behavior: %+v", up, got)
				}
				if len(got) != len(tc.wantEvents) && tc.wantEvents != nil {
					t.Fatalf("up=%v: %d events, want %d", up, len(got), len(tc.wantEvents))
				}
				for i, w := range tc.wantEvents {
					if got[i].ReplicaChange != w.change || got[i].Outdated != w.outdated {
						t.Fatalf("up=%v: event %d = %+v, want %+v", up, i, got[i], w)
					}
				}
				if len(tc.prev) > 0 && tc.prev[0].Outdated {
					t.Fatal("input events were modified")
				}
			}
		})
	}
}

// TestScaleLimitOddities pins upstream's edge behaviour of the policy loop.
func TestScaleLimitOddities(t *testing.T) {
	empty := &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{}}
	if got := ScaleUpLimit(5, History{}, empty, epoch()); got != math.MinInt32 {
		t.Errorf("no policies: up limit %d, want MinInt32 (then raised to current)", got)
	}
	// An unknown policy type repeats the previous proposal.
	odd := &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{
		{Type: autoscalingv2.PodsScalingPolicy, Value: 3, PeriodSeconds: 60}, {Type: "Bogus", Value: 100, PeriodSeconds: 60},
	}}
	if got := ScaleUpLimit(5, History{}, odd, epoch()); got != 8 {
		t.Errorf("unknown policy type: up limit %d, want 8", got)
	}
	// An event exactly one period old is outside the period.
	h := History{ScaleUpEvents: []ScaleEvent{{ReplicaChange: 3, Timestamp: mtime(-time.Minute)}}}
	if got := ScaleUpLimit(5, h, rules(3, 60, 0, 0, 0), epoch()); got != 8 {
		t.Errorf("boundary event: up limit %d, want 8", got)
	}
}

// TestDefaultSpec checks API-server defaulting of a bare spec.
func TestDefaultSpec(t *testing.T) {
	in := autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 5, Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{}}
	out := DefaultSpec(in)
	if *out.MinReplicas != 1 || len(out.Metrics) != 1 || out.Metrics[0].Resource.Name != v1.ResourceCPU ||
		*out.Metrics[0].Resource.Target.AverageUtilization != 80 || out.Behavior.ScaleDown.StabilizationWindowSeconds != nil ||
		*out.Behavior.ScaleUp.StabilizationWindowSeconds != 0 || len(out.Behavior.ScaleDown.Policies) != 1 {
		t.Fatalf("defaults %+v", out)
	}
	if in.MinReplicas != nil || in.Metrics != nil || in.Behavior.ScaleUp != nil {
		t.Fatal("input spec was modified")
	}
	if DefaultSpec(autoscalingv2.HorizontalPodAutoscalerSpec{}).Behavior != nil {
		t.Fatal("a nil behavior must stay nil")
	}
}

// A persisted history holds whole seconds. Stamps are rounded up, so a
// rescale 0.95 s into a second and a sync 1.1 s later (a whole second later
// on the clock's face) still see the rescale inside a 2 s period: a period is
// never cut short, whatever the sub-second phase of the syncs.
func TestStampsNeverShortenAPeriod(t *testing.T) {
	base := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	onePodPer2s := rules(1, 2, 0, 0, 0)
	b := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: onePodPer2s}
	for _, tc := range []struct {
		rescaleAt, syncAt time.Duration
		want              int32
	}{
		{950 * time.Millisecond, 2050 * time.Millisecond, 3}, // 1.1 s later: still in the period
		{950 * time.Millisecond, 2950 * time.Millisecond, 3}, // exactly 2 s later, but the stamp is 1 s
		{950 * time.Millisecond, 3050 * time.Millisecond, 4}, // 2.1 s later: a new period
		{0, 2 * time.Second, 4},                              // whole seconds are kept as they are
	} {
		h := RecordScaleEvent(History{}, b, 2, 3, base.Add(tc.rescaleAt))
		if got := ScaleUpLimit(3, h, onePodPer2s, base.Add(tc.syncAt)); got != tc.want {
			t.Errorf("rescale at +%v, sync at +%v: limit %d, want %d", tc.rescaleAt, tc.syncAt, got, tc.want)
		}
	}
}
