package hpa

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Fixed-time fixtures for example-based tests.

// epoch is the fixed "now" of example tests (a whole second, so that
// histories survive a JSON round trip unchanged).
func epoch() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }

// at returns epoch shifted by d.
func at(d time.Duration) time.Time { return epoch().Add(d) }

// mtime returns a metav1 time at epoch+d.
func mtime(d time.Duration) metav1.Time { return metav1.NewTime(at(d)) }

// podOpt modifies a fixture pod.
type podOpt func(*v1.Pod)

// mkPod returns a Running pod that started 10 minutes ago and has been Ready
// since shortly after, with one container "app" requesting req milli-cpu.
func mkPod(name string, req int64, opts ...podOpt) *v1.Pod {
	start := mtime(-10 * time.Minute)
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "app", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: milliQ(req)}},
		}}},
		Status: v1.PodStatus{
			Phase:     v1.PodRunning,
			StartTime: &start,
			Conditions: []v1.PodCondition{{
				Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: mtime(-10*time.Minute + 20*time.Second),
			}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// phase sets the pod phase.
func phase(ph v1.PodPhase) podOpt { return func(p *v1.Pod) { p.Status.Phase = ph } }

// deleted marks the pod as being deleted.
func deleted() podOpt {
	return func(p *v1.Pod) { t := mtime(-time.Second); p.DeletionTimestamp = &t }
}

// neverReady makes the pod Ready=False since 5s after its start.
func neverReady() podOpt {
	return func(p *v1.Pod) {
		p.Status.Conditions[0].Status = v1.ConditionFalse
		p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(p.Status.StartTime.Add(5 * time.Second))
	}
}

// becameUnready makes the pod Ready=False since 2 minutes ago, long after it
// had become ready.
func becameUnready() podOpt {
	return func(p *v1.Pod) {
		p.Status.Conditions[0].Status = v1.ConditionFalse
		p.Status.Conditions[0].LastTransitionTime = mtime(-2 * time.Minute)
	}
}

// startedAgo sets the start time; readyAgo sets the Ready transition time.
func startedAgo(d time.Duration) podOpt {
	return func(p *v1.Pod) { t := mtime(-d); p.Status.StartTime = &t }
}

func readyAgo(d time.Duration) podOpt {
	return func(p *v1.Pod) { p.Status.Conditions[0].LastTransitionTime = mtime(-d) }
}

// noReadyCondition drops the pod's conditions.
func noReadyCondition() podOpt { return func(p *v1.Pod) { p.Status.Conditions = nil } }

// samples returns 30s-window samples taken 5 seconds before epoch.
func samples(values map[string]int64) PodMetrics {
	m := PodMetrics{}
	for name, v := range values {
		m[name] = PodMetric{Value: v, Timestamp: at(-5 * time.Second), Window: 30 * time.Second}
	}
	return m
}

// podInputAt builds a PodInput at epoch with default tolerance and readiness.
func podInputAt(current int32, pods []*v1.Pod, m PodMetrics) PodInput {
	return PodInput{
		Now: epoch(), CurrentReplicas: current, Pods: pods, Metrics: m,
		Tolerances: UniformTolerances(DefaultTolerance), Readiness: DefaultReadiness(),
	}
}

func int32p(v int32) *int32 { return &v }
