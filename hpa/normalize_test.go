package hpa

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
)

// TestConvertDesiredReplicasWithRules ports upstream's table and adds the
// doc's example.
func TestConvertDesiredReplicasWithRules(t *testing.T) {
	tests := []struct {
		name                       string
		current, desired, min, max int32
		want                       int32
		reason                     string
	}{
		{"prenormalized desired replicas within range", 5, 7, 3, 8, 7, ReasonDesiredWithinRange},
		{"prenormalized desired replicas < minReplicas", 3, 1, 2, 8, 2, ReasonTooFewReplicas},
		{"prenormalized desired zeroed replicas within range", 1, 0, 0, 10, 0, ReasonDesiredWithinRange},
		{"maxReplicas is the limit because maxReplicas < scaleUpLimit", 20, 1000, 1, 10, 10, ReasonTooManyReplicas},
		{"scaleUpLimit is the limit because scaleUpLimit < maxReplicas", 3, 1000, 1, 2000, 6, ReasonScaleUpLimit},
		{"doc: current 5, min 2, max 20, desired 15 -> 10", 5, 15, 2, 20, 10, ReasonScaleUpLimit},
		{"the cap is at least 4", 1, 15, 1, 20, 4, ReasonScaleUpLimit},
		{"min is checked first", 5, 0, 3, 2, 3, ReasonTooFewReplicas},
		{"no scale-down rate limit without behavior", 100, 1, 1, 200, 1, ReasonDesiredWithinRange},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ConvertDesiredReplicasWithRules(tc.current, tc.desired, tc.min, tc.max)
			if got.Replicas != tc.want || got.Reason != tc.reason || got.Message == "" {
				t.Fatalf("got %+v, want %d %s", got, tc.want, tc.reason)
			}
		})
	}
}

// recs builds recommendations from (replicas, age) pairs.
func recs(pairs ...any) []Recommendation {
	var out []Recommendation
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, Recommendation{Replicas: int32(pairs[i].(int)), Timestamp: mtime(-pairs[i+1].(time.Duration))})
	}
	return out
}

// replicasOf lists the stored recommendation values.
func replicasOf(rs []Recommendation) []int32 {
	out := make([]int32, len(rs))
	for i, r := range rs {
		out[i] = r.Replicas
	}
	return out
}

// TestStabilize ports upstream's TestNormalizeDesiredReplicas and checks the
// stored log, not only its length.
func TestStabilize(t *testing.T) {
	tests := []struct {
		name     string
		recs     []Recommendation
		proposal int32
		want     int32
		wantLog  []int32
	}{
		{"empty log", nil, 5, 5, []int32{5}},
		{"stabilize", recs(4, 2*time.Minute, 5, time.Minute), 3, 5, []int32{4, 5, 3}},
		{"no stabilize", recs(1, 2*time.Minute, 2, time.Minute), 3, 3, []int32{1, 2, 3}},
		{"no stabilize - old recommendations", recs(10, 10*time.Minute, 9, 9*time.Minute), 3, 3, []int32{10, 3}},
		{"stabilize - old recommendations", recs(10, 10*time.Minute, 4, time.Minute, 5, 2*time.Minute, 9, 9*time.Minute), 3, 5, []int32{10, 4, 5, 3}},
		{"an entry exactly at the cutoff still counts", recs(9, 5*time.Minute), 3, 9, []int32{9, 3}},
		{"no scale-up stabilization", recs(2, time.Minute), 8, 8, []int32{2, 8}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := append([]Recommendation(nil), tc.recs...)
			got, log := Stabilize(tc.recs, tc.proposal, 5*time.Minute, epoch())
			if got != tc.want || !equalInt32(replicasOf(log), tc.wantLog) {
				t.Fatalf("got %d log %v, want %d log %v", got, replicasOf(log), tc.want, tc.wantLog)
			}
			if !equalRecs(before, tc.recs) {
				t.Fatal("input recommendations were modified")
			}
		})
	}
}

func equalInt32(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalRecs(a, b []Recommendation) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Replicas != b[i].Replicas || !a[i].Timestamp.Equal(&b[i].Timestamp) {
			return false
		}
	}
	return true
}

// TestNormalizeDesiredReplicas checks the conditions of the legacy path.
func TestNormalizeDesiredReplicas(t *testing.T) {
	h := History{Recommendations: recs(9, time.Minute)}
	n := NormalizeDesiredReplicas(h, Step{Current: 6, Proposal: 4, Min: 1, Max: 8, Now: epoch()}, 5*time.Minute)
	if n.Replicas != 8 || n.Stabilized != 9 {
		t.Fatalf("got %+v; want 9 stabilized, limited to max 8", n)
	}
	wantAble := Condition{autoscalingv2.AbleToScale, v1.ConditionTrue, ReasonScaleDownStabilized, msgScaleDownStabilized}
	wantLimited := Condition{autoscalingv2.ScalingLimited, v1.ConditionTrue, ReasonTooManyReplicas, msgTooManyReplicas}
	if n.AbleToScale != wantAble || n.ScalingLimited != wantLimited {
		t.Fatalf("conditions %+v %+v", n.AbleToScale, n.ScalingLimited)
	}
	n = NormalizeDesiredReplicas(History{}, Step{Current: 6, Proposal: 4, Min: 1, Max: 8, Now: epoch()}, 5*time.Minute)
	if n.Replicas != 4 || n.AbleToScale.Reason != ReasonReadyForNewScale || n.ScalingLimited.Status != v1.ConditionFalse ||
		n.ScalingLimited.Reason != ReasonDesiredWithinRange || len(n.History.Recommendations) != 1 {
		t.Fatalf("got %+v", n)
	}
}
