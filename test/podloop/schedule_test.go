package podloop

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
	"github.com/tidal-autoscaler/tidal/cmd/tidal/app"
	"github.com/tidal-autoscaler/tidal/hpa"
	"github.com/tidal-autoscaler/tidal/hpa/controller"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// TestScheduleRaisesMinimum: a PodAutoscaler whose metric asks for one
// replica, with a window open all the time (minimum 3) and one in a time
// zone that does not exist. The open window raises the workload to 3 and
// holds it there (ScalingLimited TooFewReplicas naming the window); the bad
// one is reported and ignored.
func TestScheduleRaisesMinimum(t *testing.T) {
	hpaInstallCRD(t)
	const group = "zs-pool"
	deleteNodesOnCleanup(t, group+"-")
	ns := hpaNamespace(t)
	sim := metrics.NewSimulated()
	groups := fmt.Sprintf("nodeGroups:\n- {name: %s, minSize: 0, maxSize: 1, initialSize: 0, zone: z, cpu: '4', memory: 16Gi, provisioningDelay: 1s}\n", group)
	runCtx := testenv.LogOnFailure(context.Background(), t, testenv.LogVerbosity)
	tl := testenv.StartTidalWith(runCtx, t, cluster.KubeconfigPath, []app.Option{app.WithSimulatedMetrics(sim)},
		"--leader-elect=false", "--local-node-groups="+writeGroups(t, groups), "--scan-interval=2s",
		"--hpa-metrics-source=simulated", "--hpa-sync-period=2s")
	web := deployment(ns, "web", 1, "100m", "64Mi")
	web.Spec.Template.Spec.NodeSelector = map[string]string{local.NodeGroupLabel: group}
	create(t, cluster.Client.AppsV1().Deployments(ns).Create, web)
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
