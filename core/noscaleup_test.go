package core

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/scaleup"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// podEvents records which pods got which events.
type podEvents struct{ got map[string][]string }

func (r *podEvents) Event(obj runtime.Object, _, reason, _ string) {
	if p, ok := obj.(*corev1.Pod); ok {
		r.got[reason] = append(r.got[reason], p.Name)
	}
}
func (r *podEvents) Eventf(obj runtime.Object, t, reason, format string, args ...any) {
	r.Event(obj, t, reason, fmt.Sprintf(format, args...))
}
func (r *podEvents) AnnotatedEventf(obj runtime.Object, _ map[string]string, t, reason, format string, args ...any) {
	r.Eventf(obj, t, reason, format, args...)
}

// An equivalence group of 4 pending pods, 2 waiting for nodes asked for
// and 2 no group can help: the events, the status and the metric speak of
// the 2, and the metric counts each of the 4 pending pods once.
func TestNoScaleUpIsToldOnlyToThePodsLeft(t *testing.T) {
	var pods []*corev1.Pod
	for i := range 4 {
		name := fmt.Sprintf("web-%d", i)
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name)}})
	}
	group := &simulator.PodGroup{Key: "web", Pods: pods}
	plan := &scaleup.Plan{FitExisting: 2, Awaiting: map[types.UID]string{"web-0": "g", "web-1": "g"},
		NoScaleUp: []scaleup.NoScaleUp{{Group: group, Pods: pods[2:], Reasons: map[string]int{scaleup.ReasonMaxSize: 1}}}}
	clock := clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))
	rec := &podEvents{got: map[string][]string{}}
	l := &Decider{events: newEventDeduper(rec, clock, false), ahead: newExpectations(),
		metrics: NewMetrics(prometheus.NewRegistry(), false), state: clusterstate.New(clusterstate.Options{})}
	explainNoScaleUp(l.events, l.ahead.source, plan, nil)
	if got := fmt.Sprint(rec.got["NotTriggerScaleUp"]); got != "[web-2 web-3]" {
		t.Fatalf("NotTriggerScaleUp on %s, want the 2 pods no group helps", got)
	}
	r := &Iteration{observed: observed{pending: pods, unschedulable: 4}, plan: plan}
	st := scaleUpStatus(r)
	if len(st.NoScaleUp) != 1 || st.NoScaleUp[0].Pods != 2 || st.NoScaleUp[0].Example != "ns/web-2" {
		t.Fatalf("status noScaleUp %+v, want 2 pods, web-2 for example", st.NoScaleUp)
	}
	setGauges(l.metrics, r)
	m := l.metrics.UnschedulablePods
	sum := 0.0
	for _, reason := range []string{"expendable", "too_young", "unsupported", "fits_existing_or_upcoming", "skipped_for_time", "scale_up_triggered", "no_node_group_fits"} {
		sum += testutil.ToFloat64(m.WithLabelValues(reason))
	}
	if refused := testutil.ToFloat64(m.WithLabelValues("no_node_group_fits")); refused != 2 || sum != 4 {
		t.Fatalf("tidal_unschedulable_pods_count: %v no_node_group_fits, %v in all; want 2 of 4", refused, sum)
	}
}
