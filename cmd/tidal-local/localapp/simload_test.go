package localapp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/hpa/metrics"
)

func TestParseSimulatedLoad(t *testing.T) {
	for _, tc := range []struct {
		value, want, wantErr string
	}{
		{value: "cpu=1500m", want: "map[cpu:1.5]"},
		{value: " cpu = 2 , requests_per_second=120,", want: "map[cpu:2 requests_per_second:120]"},
		{value: "memory=1Gi", want: "map[memory:1.073741824e+09]"},
		{value: "queue=0", want: "map[queue:0]"},
		{value: "", wantErr: "no metric"},
		{value: "cpu", wantErr: `entry "cpu": want METRIC=QUANTITY`},
		{value: "=2", wantErr: `entry "=2": want METRIC=QUANTITY`},
		{value: "cpu=lots", wantErr: `cpu="lots"`},
		{value: "cpu=-1", wantErr: "must not be negative"},
		{value: "cpu=1,cpu=2", wantErr: "metric cpu is given twice"},
	} {
		got, err := parseSimulatedLoad(tc.value)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%q: error %v, want it to contain %q", tc.value, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || fmt.Sprint(got) != tc.want):
			t.Errorf("%q: %v (error %v), want %s", tc.value, got, err, tc.want)
		}
	}
}

// The watcher sets an autoscaler's own load from its annotation, changes
// and removes it as the annotation does, names a bad annotation once, and
// changes nothing when the autoscalers cannot be listed.
func TestLoadWatcherFollowsAnnotations(t *testing.T) {
	sim := metrics.NewSimulated()
	var notes []string
	var listed []annotatedAutoscaler
	var listErr error
	w := &loadWatcher{sim: sim, applied: map[string]float64{}, reported: map[string]bool{},
		note: func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) },
		list: func(context.Context) ([]annotatedAutoscaler, error) { return listed, listErr }}
	cpuOf := func(autoscaler string) (int64, error) {
		running := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		d := sim.Fetch(context.Background(), metrics.Request{Namespace: "shop", Autoscaler: autoscaler, Now: time.Now(),
			Pods: []*corev1.Pod{running}, Metric: autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU}}})
		return d.PodMetrics["p"].Value, d.Err
	}

	listed = []annotatedAutoscaler{{"HorizontalPodAutoscaler", "shop", "web", "cpu=1500m"},
		{"PodAutoscaler", "shop", "api", "cpu=lots"}}
	w.sync(context.Background())
	w.sync(context.Background())
	if v, err := cpuOf("web"); err != nil || v != 1500 {
		t.Fatalf("web's cpu %dm (%v), want 1500m from its annotation", v, err)
	}
	if _, err := cpuOf("api"); err == nil {
		t.Fatal("api's malformed annotation set a load")
	}
	if bad := countContaining(notes, `PodAutoscaler shop/api: annotation local.tidal.dev/simulated-load="cpu=lots"`); bad != 1 {
		t.Fatalf("the bad annotation was noted %d times, want once: %q", bad, notes)
	}

	listed[0].value = "cpu=3"
	w.sync(context.Background())
	if v, _ := cpuOf("web"); v != 3000 {
		t.Fatalf("web's cpu %dm after the annotation changed, want 3000m", v)
	}
	listed, listErr = nil, errors.New("connection refused")
	w.sync(context.Background())
	if v, _ := cpuOf("web"); v != 3000 {
		t.Fatalf("web's cpu %dm after a failed list, want 3000m kept", v)
	}
	listErr = nil
	w.sync(context.Background())
	if _, err := cpuOf("web"); err == nil {
		t.Fatalf("web's load stayed after its annotation went; notes %q", notes)
	}
}

func countContaining(list []string, s string) int {
	n := 0
	for _, e := range list {
		if strings.Contains(e, s) {
			n++
		}
	}
	return n
}
