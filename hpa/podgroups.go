package hpa

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// PodMetric is one pod's sample of a metric: its value in milli-units, when it
// was taken and the window it was averaged over.
type PodMetric struct {
	Timestamp time.Time
	Window    time.Duration
	Value     int64
}

// PodMetrics maps pod names to their samples. Entries naming pods that are not
// in the pod list are allowed (the metrics API may know pods the cache does
// not yet); they count the way Kubernetes counts them.
type PodMetrics map[string]PodMetric

// Readiness holds the two timing parameters that decide whether a pod's cpu
// sample is trusted.
type Readiness struct {
	// CPUInitializationPeriod is how long after start a pod's cpu samples
	// are distrusted unless it is ready and has a full window since then.
	CPUInitializationPeriod time.Duration
	// InitialReadinessDelay is how long after start a Ready=False transition
	// still counts as "never became ready".
	InitialReadinessDelay time.Duration
}

// DefaultReadiness returns the Kubernetes defaults (5m and 30s).
func DefaultReadiness() Readiness {
	return Readiness{
		CPUInitializationPeriod: DefaultCPUInitializationPeriod,
		InitialReadinessDelay:   DefaultInitialReadinessDelay,
	}
}

// PodGroups is the classification of the pods a selector matched.
type PodGroups struct {
	// Ready counts the pods whose samples are used as they are.
	Ready int
	// Unready pods are Pending, or (for cpu only) still initialising or
	// never ready. Their samples are dropped; on a scale-up they count as 0.
	Unready []string
	// Missing pods are running pods without a sample.
	Missing []string
	// Ignored pods are being deleted or have failed.
	Ignored []string
}

// Pod classes, stored in the low bits of a class byte; bit 7 records whether
// the metrics map has an entry for the pod.
const (
	classReady uint8 = iota
	classUnready
	classMissing
	classIgnored

	classMask uint8 = 0x0f
	hasMetric uint8 = 0x80
)

// GroupPods sorts pods into ready, unready, missing and ignored exactly as the
// HPA controller does before using their samples:
//
//   - deleted (deletionTimestamp set) or Failed pods are ignored;
//   - Pending pods are unready;
//   - pods without a sample are missing;
//   - for the cpu resource only, a pod is unready if it has no Ready condition
//     or no start time; or if it is within CPUInitializationPeriod of its start
//     and either not ready or its sample does not cover a full window since
//     the last readiness transition; or if it is past that period, not ready,
//     and its readiness last changed within InitialReadinessDelay of its start;
//   - every other pod is ready.
func GroupPods(pods []*v1.Pod, metrics PodMetrics, resource v1.ResourceName, now time.Time, r Readiness) PodGroups {
	var g PodGroups
	for _, pod := range pods {
		switch classifyPod(pod, metrics, resource, now, r) & classMask {
		case classReady:
			g.Ready++
		case classUnready:
			g.Unready = append(g.Unready, pod.Name)
		case classMissing:
			g.Missing = append(g.Missing, pod.Name)
		default:
			g.Ignored = append(g.Ignored, pod.Name)
		}
	}
	return g
}

// classifyPod returns the pod's class, with hasMetric set when a sample exists.
func classifyPod(pod *v1.Pod, metrics PodMetrics, resource v1.ResourceName, now time.Time, r Readiness) uint8 {
	m, found := metrics[pod.Name]
	var flag uint8
	if found {
		flag = hasMetric
	}
	switch {
	case pod.DeletionTimestamp != nil || pod.Status.Phase == v1.PodFailed:
		return classIgnored | flag
	case pod.Status.Phase == v1.PodPending:
		return classUnready | flag
	case !found:
		return classMissing
	case resource == v1.ResourceCPU && cpuUnready(pod, m, now, r):
		return classUnready | flag
	}
	return classReady | flag
}

// cpuUnready applies the cpu-only readiness rules to a running pod with a sample.
func cpuUnready(pod *v1.Pod, m PodMetric, now time.Time, r Readiness) bool {
	cond := readyCondition(pod)
	start := pod.Status.StartTime
	if cond == nil || start == nil {
		return true
	}
	if start.Add(r.CPUInitializationPeriod).After(now) {
		return cond.Status == v1.ConditionFalse ||
			m.Timestamp.Before(cond.LastTransitionTime.Add(m.Window))
	}
	return cond.Status == v1.ConditionFalse &&
		start.Add(r.InitialReadinessDelay).After(cond.LastTransitionTime.Time)
}

// readyCondition returns the pod's first Ready condition, or nil.
func readyCondition(pod *v1.Pod) *v1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == v1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// ReadyRunningPods counts pods in phase Running whose Ready condition is True.
// Object and External Value targets multiply by this count; note that it does
// not skip pods being deleted.
func ReadyRunningPods(pods []*v1.Pod) int {
	n := 0
	for _, pod := range pods {
		if pod.Status.Phase != v1.PodRunning {
			continue
		}
		if c := readyCondition(pod); c != nil && c.Status == v1.ConditionTrue {
			n++
		}
	}
	return n
}

// Errors shared by the pod-based calculations.
const (
	errNoPods    = constError("no pods returned by selector while calculating replica count")
	errNoMetrics = constError("did not receive metrics for targeted pods (pods might be unready)")
)

// podSet is the grouped view of one pod-based calculation.
type podSet struct {
	class                   []uint8
	ready, unready, missing int
	// extraneous counts metric entries naming no listed pod.
	extraneous int
}

// groupForCalc classifies the pods and checks that some sample survives, the
// way the replica calculator does before it computes a ratio.
func groupForCalc(in PodInput, resource v1.ResourceName) (podSet, error) {
	if len(in.Pods) == 0 {
		return podSet{}, errNoPods
	}
	s := podSet{class: make([]uint8, len(in.Pods))}
	withMetric := 0
	for i, pod := range in.Pods {
		c := classifyPod(pod, in.Metrics, resource, in.Now, in.Readiness)
		s.class[i] = c
		if c&hasMetric != 0 {
			withMetric++
		}
		switch c & classMask {
		case classReady:
			s.ready++
		case classUnready:
			s.unready++
		case classMissing:
			s.missing++
		}
	}
	s.extraneous = len(in.Metrics) - withMetric
	if s.ready+s.extraneous == 0 {
		return podSet{}, errNoMetrics
	}
	return s, nil
}

// is reports whether pod i has the given class.
func (s podSet) is(i int, class uint8) bool {
	return s.class[i]&classMask == class
}
