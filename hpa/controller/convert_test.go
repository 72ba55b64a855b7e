package controller

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/hpa"
)

func TestHistoryConvertsBothWays(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	for name, h := range map[string]hpa.History{
		"recommendations only": {Recommendations: []hpa.Recommendation{{Replicas: 3, Timestamp: at}, {Replicas: 5, Timestamp: at}}},
		"all three": {
			Recommendations: []hpa.Recommendation{{Replicas: 1, Timestamp: at}},
			ScaleUpEvents:   []hpa.ScaleEvent{{ReplicaChange: 2, Timestamp: at}},
			ScaleDownEvents: []hpa.ScaleEvent{{ReplicaChange: 1, Timestamp: at, Outdated: true}},
		},
	} {
		stored := historyToAPI(h)
		if stored == nil {
			t.Fatalf("%s: stored nothing", name)
		}
		if back := historyFromAPI(stored); !reflect.DeepEqual(back, h) {
			t.Errorf("%s: round trip gave %+v, want %+v", name, back, h)
		}
	}
	if historyToAPI(hpa.History{}) != nil {
		t.Error("an empty history is stored")
	}
	if got := historyFromAPI(nil); !reflect.DeepEqual(got, hpa.History{}) {
		t.Errorf("no stored history read as %+v", got)
	}
}

func TestWatermarksConvertIndexAligned(t *testing.T) {
	pct := int32(10)
	got := watermarksFromAPI([]*v1alpha1.Watermarks{nil, {MaxScaleDownPercent: &pct}})
	if len(got) != 2 || got[0] != nil || got[1] == nil || *got[1].MaxScaleDownPercent != 10 {
		t.Fatalf("watermarks %+v", got)
	}
	if watermarksFromAPI(nil) != nil {
		t.Fatal("no watermarks converted to some")
	}
}
