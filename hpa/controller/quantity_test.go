package controller

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
)

// unbounded is a quantity Kubernetes' parser takes hours on.
const unbounded = "1e-2000000000"

// TestStoredUnboundedQuantitiesDoNotStallThePodLoop: PodAutoscalers stored
// before the CRD bounded their quantities, one listed and one arriving by
// the watch, reach tidal's informer through the typed client (the real
// client-go decoding, against an API server speaking the wire protocol):
// the informer syncs, each is reported invalid with the field named and
// left unscaled, and the autoscaler beside them scales. Before quantities
// were checked, the informer's decoding of the list did not end: this test
// then runs into its -timeout.
func TestStoredUnboundedQuantitiesDoNotStallThePodLoop(t *testing.T) {
	listed := paJSON(t, externalPA("api", "7"), `"7"`, `"`+unbounded+`"`)
	watched := paJSON(t, watermarkedPA("db", "80"), `"80"`, unbounded) // a JSON number
	srv := newPAServer(t, [][]byte{paJSON(t, cpuPA("ns", "web", 50, 1, 10), "", ""), listed}, watched)

	h := watchPAServer(t, srv, "ns/db")
	h.deployment("ns", "web", 2)
	h.deployment("ns", "api", 2)
	h.deployment("ns", "db", 2)
	h.sim.Set("cpu", metrics.Constant(0.2)) // 100% of the request
	h.sim.Set("queue", metrics.Constant(100))

	h.sync("ns/web")
	if got := h.scales.replicas("ns", "web"); got != 4 {
		t.Fatalf("the valid autoscaler scaled web to %d, want 4", got)
	}
	for _, tc := range []struct{ name, field string }{
		{"api", "spec.metrics[0].external.target.averageValue"},
		{"db", "spec.metrics[0].watermarks.high"},
	} {
		h.sync("ns/" + tc.name)
		if got := h.scales.replicas("ns", tc.name); got != 2 {
			t.Errorf("%s scaled to %d on a spec tidal could not read", tc.name, got)
		}
		cond := condition(srv.status(t, tc.name), autoscalingv2.ScalingActive)
		want := fmt.Sprintf(`%s: Invalid value: "%s": should match`, tc.field, unbounded)
		if cond.Status != corev1.ConditionFalse || cond.Reason != EventInvalidQuantity || !strings.Contains(cond.Message, want) {
			t.Errorf("%s: ScalingActive %+v, want False %s naming %s", tc.name, cond, EventInvalidQuantity, want)
		}
	}
	if ev := h.events(); !hasEvent(ev, "Warning InvalidQuantity quantities out of bounds") {
		t.Errorf("events %q", ev)
	}
}

// externalPA is a PodAutoscaler of the deployment on the External metric
// queue, with the given average value target.
func externalPA(name, target string) *v1alpha1.PodAutoscaler {
	pa := cpuPA("ns", name, 50, 1, 10)
	pa.Spec.Metrics[0].MetricSpec = autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType,
		External: &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "queue"},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse(target))}}}
	return pa
}

// watermarkedPA is a PodAutoscaler on cpu with a high watermark.
func watermarkedPA(name, high string) *v1alpha1.PodAutoscaler {
	pa := cpuPA("ns", name, 50, 1, 10)
	pa.Spec.Metrics[0].Watermarks = &v1alpha1.Watermarks{High: ptr.To(resource.MustParse(high))}
	return pa
}

// paJSON is pa as the API server sends it, with the JSON text from
// replaced by to (what the typed client cannot write).
func paJSON(t *testing.T, pa *v1alpha1.PodAutoscaler, from, to string) []byte {
	pa.APIVersion, pa.Kind = v1alpha1.SchemeGroupVersion.String(), v1alpha1.Kind
	raw, err := json.Marshal(pa)
	if err != nil {
		t.Fatal(err)
	}
	if from == "" {
		return raw
	}
	if bytes.Count(raw, []byte(from)) != 1 {
		t.Fatalf("%s is not once in %s", from, raw)
	}
	return bytes.Replace(raw, []byte(from), []byte(to), 1)
}

// paServer speaks the API server's wire protocol for PodAutoscalers: a
// list (or a watch with the initial events, as client-go asks by default)
// of listed, then a watch that adds watched; status updates are kept.
type paServer struct {
	*httptest.Server
	mu       sync.Mutex
	statuses map[string][]byte
}

func newPAServer(t *testing.T, listed [][]byte, watched []byte) *paServer {
	s := &paServer{statuses: map[string][]byte{}}
	const collection = "/apis/autoscaling.tidal.dev/v1alpha1/podautoscalers"
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch q := r.URL.Query(); {
		case r.Method == http.MethodGet && r.URL.Path == collection && q.Get("watch") != "true":
			fmt.Fprintf(w, `{"apiVersion":"autoscaling.tidal.dev/v1alpha1","kind":"PodAutoscalerList","metadata":{"resourceVersion":"10"},"items":[%s]}`,
				bytes.Join(listed, []byte(",")))
		case r.Method == http.MethodGet && r.URL.Path == collection:
			if q.Get("sendInitialEvents") == "true" {
				for _, o := range listed {
					s.event(w, "ADDED", o)
				}
				s.event(w, "BOOKMARK", []byte(`{"apiVersion":"autoscaling.tidal.dev/v1alpha1","kind":"PodAutoscaler",`+
					`"metadata":{"resourceVersion":"10","annotations":{"k8s.io/initial-events-end":"true"}}}`))
			}
			s.event(w, "ADDED", watched)
			<-r.Context().Done()
		case r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/status"):
			body, _ := io.ReadAll(r.Body)
			s.mu.Lock()
			s.statuses[strings.Split(r.URL.Path, "/")[7]] = body
			s.mu.Unlock()
			_, _ = w.Write(body)
		default:
			http.Error(w, "not served here", http.StatusNotFound)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// event writes one watch event.
func (s *paServer) event(w http.ResponseWriter, typ string, obj []byte) {
	fmt.Fprintf(w, `{"type":%q,"object":%s}`+"\n", typ, obj)
	w.(http.Flusher).Flush()
}

// status returns the status last written to a PodAutoscaler.
func (s *paServer) status(t *testing.T, name string) autoscalingv2.HorizontalPodAutoscalerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	var pa v1alpha1.PodAutoscaler
	if err := json.Unmarshal(s.statuses[name], &pa); err != nil {
		t.Fatalf("status of %s: %v", name, err)
	}
	return pa.Status.HorizontalPodAutoscalerStatus
}
