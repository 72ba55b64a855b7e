package podloop

import (
	"context"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/hpa"
	"github.com/tidal-autoscaler/tidal/hpa/controller"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
)

// TestScheduleRaisesMinimum: a PodAutoscaler whose metric asks for one
// replica, with a window open all the time (minimum 3) and one in a time
// zone that does not exist. The open window raises the workload to 3 and
// holds it there (ScalingLimited TooFewReplicas naming the window); the bad
// one is reported and ignored.
func TestScheduleRaisesMinimum(t *testing.T) {
	parallel(t)
	const group = "zs-pool"
	tl, sim, ns := startOnEmptyGroup(t, group, 1)
	webOn(t, ns, group, 1, "100m", "64Mi")
	sim.Set(ns+"/queue", metrics.Constant(5)) // one replica's worth

	pa := zeroAutoscaler(ns)
	pa.Spec.MinReplicas = ptr.To[int32](1)
	pa.Spec.Schedules = []v1alpha1.Schedule{
		{Name: "always", Start: "* * * * *", Duration: metav1.Duration{Duration: time.Hour}, MinReplicas: 3},
		{Name: "mars", Start: "0 8 * * *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "Mars/Olympus", MinReplicas: 4},
	}
	hpaCreatePA(t, pa)
	hpaWaitReplicas(t, ns, "web", 3, 30*time.Second)
	hpaWaitEvent(t, ns, "InvalidSchedule", `schedule "mars": timeZone "Mars/Olympus"`)
	poll(t, 30*time.Second, "SchedulesValid False and ScalingLimited naming the window", func(context.Context) (bool, error) {
		got := hpaGetPA(t, ns, "web")
		valid := hpaCondition(got, controller.ConditionSchedulesValid)
		limited := hpaCondition(got, autoscalingv2.ScalingLimited)
		return valid.Status == corev1.ConditionFalse && strings.Contains(valid.Message, "mars") &&
			limited.Reason == hpa.ReasonTooFewReplicas && strings.Contains(limited.Message, "raised to 3 by schedule always"), nil
	})
	hpaHoldReplicas(t, ns, "web", 3, 4*time.Second)
	if err := tl.Stop(t); err != nil {
		t.Fatalf("tidal stopped with %v", err)
	}
}
