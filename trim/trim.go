// Package trim drops from the objects tidal's informers cache what tidal
// never reads, so that the cache of a large cluster stays small: every
// object loses its managedFields; pods and nodes also lose the annotations
// tidal does not honour, pods the parts of their containers and status
// that neither tidal nor the scheduler plugins it runs read, and nodes
// their image lists.
//
// Only pods and nodes lose annotations: tidal never writes either back
// from its cache (it evicts pods, and re-reads a node before it taints it).
// Other kinds keep theirs, because tidal writes the status of autoscaling
// objects from the cached copy, and a status update keeps the metadata it
// is sent. managedFields may go from every kind: the API server keeps an
// object's managedFields when an update carries none.
//
// A Sharer's Transform, tidal's informer transform, trims and then makes
// cached pods share what replicas have in common.
package trim

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// Object trims obj in place and returns it: the transform function of
// tidal's informers. It is idempotent, as a transform must be, and leaves
// alone what is not an API object.
func Object(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		Pod(o)
	case *corev1.Node:
		Node(o)
	case metav1.Object:
		o.SetManagedFields(nil)
	}
	return obj, nil
}

var _ cache.TransformFunc = Object

// Pod drops what tidal never reads from p: managedFields; annotations but
// those KeepAnnotation keeps; in every container the command, arguments,
// working directory, environment, probes and lifecycle hooks; and of the
// status all but the phase, reason, start time, nominated node, QoS class,
// resource claims, the conditions KeepCondition keeps (without their
// messages; a bound pod without its PodScheduled) and the resources of containers a resize made differ from
// their spec (the scheduler counts the larger of the two, so only those
// count). What the scheduler's Filter plugins, the drain rules, the
// equivalence groups and the pod loop read stays: labels, owners, the
// whole spec but those container fields (resources, ports, restart
// policies and rules, volumes, tolerations, affinity...) and that status.
// The ServiceAccount admission's token volume is renamed TokenVolumeName,
// and what is left of trimmed lists and maps is kept in ones of its size.
func Pod(p *corev1.Pod) {
	p.ManagedFields = nil
	p.Annotations = keptAnnotations(p.Annotations)
	for i := range p.Spec.InitContainers {
		container(&p.Spec.InitContainers[i])
	}
	for i := range p.Spec.Containers {
		container(&p.Spec.Containers[i])
	}
	for i := range p.Spec.EphemeralContainers {
		common := &p.Spec.EphemeralContainers[i].EphemeralContainerCommon
		c := corev1.Container(*common)
		container(&c)
		*common = corev1.EphemeralContainerCommon(c)
	}
	podStatus(p)
	canonicalTokenVolume(p)
}

// podStatus drops from p's status what Pod says.
func podStatus(p *corev1.Pod) {
	st := &p.Status
	st.Message, st.PodIP, st.PodIPs, st.HostIP, st.HostIPs = "", "", nil, "", nil
	bound := p.Spec.NodeName != ""
	st.Conditions = compact(slices.DeleteFunc(st.Conditions, func(c corev1.PodCondition) bool {
		// A bound pod's PodScheduled is read by no one: only pods without
		// a node are pending or unschedulable.
		return !KeepCondition(c.Type) || bound && c.Type == corev1.PodScheduled
	}))
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.Message = ""
		c.Type = known(c.Type, corev1.PodScheduled, corev1.PodReady, corev1.PodResizePending, corev1.PodResizeInProgress, corev1.DisruptionTarget)
		c.Status = known(c.Status, corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown)
		c.Reason = known(c.Reason, corev1.PodReasonUnschedulable, corev1.PodReasonSchedulingGated)
	}
	st.Phase = known(st.Phase, corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown)
	st.QOSClass = known(st.QOSClass, corev1.PodQOSGuaranteed, corev1.PodQOSBurstable, corev1.PodQOSBestEffort)
	st.InitContainerStatuses = resized(p, st.InitContainerStatuses)
	st.ContainerStatuses = resized(p, st.ContainerStatuses)
	st.EphemeralContainerStatuses = nil // ephemeral containers have no resources
}

// known returns the constant of consts equal to s, or s when there is
// none. A decoded object has its own copy of every string; the cached one
// then holds the program's constant instead, one heap allocation less per
// pod and field.
func known[S ~string](s S, consts ...S) S {
	for _, c := range consts {
		if s == c {
			return c
		}
	}
	return s
}

// KeepCondition reports whether tidal or a Filter plugin reads the pod
// condition: PodScheduled (of pending pods only), Ready (the pod loop),
// the resize conditions (the scheduler's requests of a resized pod) and
// DisruptionTarget.
func KeepCondition(t corev1.PodConditionType) bool {
	switch t {
	case corev1.PodScheduled, corev1.PodReady, corev1.PodResizePending, corev1.PodResizeInProgress, corev1.DisruptionTarget:
		return true
	}
	return false
}

// containerSpec returns p's container or init container called name, or
// nil.
func containerSpec(p *corev1.Pod, name string) *corev1.Container {
	for _, ctrs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for i := range ctrs {
			if ctrs[i].Name == name {
				return &ctrs[i]
			}
		}
	}
	return nil
}

// container drops what no Filter plugin nor tidal reads from c.
func container(c *corev1.Container) {
	c.Command, c.Args, c.WorkingDir = nil, nil, ""
	c.Env, c.EnvFrom = nil, nil
	c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle = nil, nil, nil, nil
}

// resized keeps of statuses those whose resources are not their
// container's spec's (a resize made them differ), with only their name and
// resources, and returns nil when none is left.
func resized(p *corev1.Pod, statuses []corev1.ContainerStatus) []corev1.ContainerStatus {
	kept := statuses[:0]
	for _, s := range statuses {
		c := containerSpec(p, s.Name)
		if (s.Resources == nil && s.AllocatedResources == nil) || (c != nil && sameResources(&s, c.Resources)) {
			continue
		}
		kept = append(kept, corev1.ContainerStatus{Name: s.Name, Resources: s.Resources, AllocatedResources: s.AllocatedResources})
	}
	return compact(kept)
}

// compact returns s in an array of its own length, or nil when s is empty.
// What is deleted from a slice in place still takes room: a decoder's
// array has room to spare (a pod's five conditions are decoded into an
// array of eight), and a cached pod would keep it all for the one or two left.
func compact[S ~[]E, E any](s S) S {
	switch {
	case len(s) == 0:
		return nil
	case cap(s) == len(s):
		return s
	}
	return slices.Clone(s)
}

// sameResources reports whether the status's allocated and actual
// resources are the spec's r.
func sameResources(s *corev1.ContainerStatus, r corev1.ResourceRequirements) bool {
	same := func(a, b corev1.ResourceList) bool { return apiequality.Semantic.DeepEqual(a, b) }
	return same(s.AllocatedResources, r.Requests) &&
		(s.Resources == nil || same(s.Resources.Requests, r.Requests) && same(s.Resources.Limits, r.Limits))
}

// Node drops what tidal never reads from n: managedFields, annotations but
// those KeepAnnotation keeps, and the list of images on the node (only the
// scheduler's ImageLocality score reads it; tidal runs Filter plugins).
func Node(n *corev1.Node) {
	n.ManagedFields = nil
	n.Annotations = keptAnnotations(n.Annotations)
	n.Status.Images = nil
}

// Annotation keys and prefixes tidal reads on pods and nodes.
const (
	// clusterAutoscalerPrefix starts Cluster Autoscaler's annotations,
	// which tidal honours (safe-to-evict, safe-to-evict-local-volumes,
	// pod-scale-up-delay, scale-down-disabled) and which make pods
	// schedule apart in its equivalence groups.
	clusterAutoscalerPrefix = "cluster-autoscaler.kubernetes.io/"
	// tidalDomain ends the prefix of tidal's own annotations
	// (tidal.dev/..., autoscaling.tidal.dev/...).
	tidalDomain = "tidal.dev"
)

// KeepAnnotation reports whether tidal reads the pod or node annotation
// key: Cluster Autoscaler's, tidal's own, the mirror pod marker (the drain
// rules leave static pods' mirrors alone) and pod-deletion-cost (a scale-in
// leaves a cost the user set alone).
func KeepAnnotation(key string) bool {
	if strings.HasPrefix(key, clusterAutoscalerPrefix) || key == corev1.MirrorPodAnnotationKey || key == corev1.PodDeletionCost {
		return true
	}
	prefix, _, ok := strings.Cut(key, "/")
	return ok && (prefix == tidalDomain || strings.HasSuffix(prefix, "."+tidalDomain))
}

// keptAnnotations returns the annotations of a tidal reads, nil when there
// is none. A map does not shrink when keys are deleted from it: when some
// go, those kept are copied into a map of their size.
func keptAnnotations(a map[string]string) map[string]string {
	kept := 0
	for k := range a {
		if KeepAnnotation(k) {
			kept++
		}
	}
	switch {
	case kept == 0:
		return nil
	case kept == len(a):
		return a
	}
	out := make(map[string]string, kept)
	for k, v := range a {
		if KeepAnnotation(k) {
			out[k] = v
		}
	}
	return out
}
