// Package simulator answers what-if scheduling questions: would this pod fit
// on that node, on a node of that group, on the cluster after some change.
package simulator

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// Resources are the requests that node capacity is checked against.
type Resources struct {
	MilliCPU int64
	Memory   int64
	Pods     int64
}

// PodRequests returns a pod's effective requests (init and sidecar
// containers and pod-level resources included) and 1 pod slot.
func PodRequests(pod *corev1.Pod) Resources {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	return Resources{MilliCPU: reqs.Cpu().MilliValue(), Memory: reqs.Memory().Value(), Pods: 1}
}

// Allocatable returns what a node offers to pods.
func Allocatable(node *corev1.Node) Resources {
	a := node.Status.Allocatable
	return Resources{MilliCPU: a.Cpu().MilliValue(), Memory: a.Memory().Value(), Pods: quantity(a, corev1.ResourcePods)}
}

func quantity(l corev1.ResourceList, name corev1.ResourceName) int64 {
	if q, ok := l[name]; ok {
		return q.Value()
	}
	return 0
}

// Add returns r + o.
func (r Resources) Add(o Resources) Resources {
	return Resources{MilliCPU: r.MilliCPU + o.MilliCPU, Memory: r.Memory + o.Memory, Pods: r.Pods + o.Pods}
}

// Sub returns r - o.
func (r Resources) Sub(o Resources) Resources {
	return Resources{MilliCPU: r.MilliCPU - o.MilliCPU, Memory: r.Memory - o.Memory, Pods: r.Pods - o.Pods}
}

// Covers reports whether r is at least o in every dimension.
func (r Resources) Covers(o Resources) bool {
	return r.MilliCPU >= o.MilliCPU && r.Memory >= o.Memory && r.Pods >= o.Pods
}

func (r Resources) String() string {
	return fmt.Sprintf("cpu=%s memory=%s pods=%d", resource.NewMilliQuantity(r.MilliCPU, resource.DecimalSI),
		resource.NewQuantity(r.Memory, resource.BinarySI), r.Pods)
}

// NodeAccepts reports whether node's labels, node affinity and taints admit
// pod, ignoring resources. It returns the reason when they do not.
func NodeAccepts(pod *corev1.Pod, node *corev1.Node) (bool, string) {
	ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)
	if err != nil {
		return false, fmt.Sprintf("invalid node affinity: %v", err)
	}
	if !ok {
		return false, "node(s) didn't match Pod's node affinity/selector"
	}
	taint, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations,
		func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false)
	if untolerated {
		return false, fmt.Sprintf("node(s) had untolerated taint {%s: %s}", taint.Key, taint.Value)
	}
	return true, ""
}
