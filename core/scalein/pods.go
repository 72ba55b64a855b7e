package scalein

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
)

// Replicas turns the workload's pods, as listed, into replicas. Pods being
// deleted or finished are left out: the ReplicaSet does not count them.
func Replicas(pods []*corev1.Pod) []Replica {
	out := make([]Replica, 0, len(pods))
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		out = append(out, Replica{
			Name: p.Name, UID: p.UID, Node: p.Spec.NodeName,
			Early: p.Status.Phase != corev1.PodRunning || !podutil.IsPodReady(p),
			Cost:  p.Annotations[CostAnnotation], Owned: p.Annotations[OwnedAnnotation] == "true",
		})
	}
	return out
}

// MergePatch is the JSON merge patch that writes p: the cost and tidal's
// mark, or, for an empty cost, neither. With a resource version the API
// server refuses the patch (a conflict) when the pod changed since it was
// read, so a cost a user set meanwhile is not overwritten.
func MergePatch(p Patch, resourceVersion string) ([]byte, error) {
	var annotations map[string]*string
	if p.Cost == "" {
		annotations = map[string]*string{CostAnnotation: nil, OwnedAnnotation: nil}
	} else {
		owned := "true"
		annotations = map[string]*string{CostAnnotation: &p.Cost, OwnedAnnotation: &owned}
	}
	meta := map[string]any{"annotations": annotations}
	if resourceVersion != "" {
		meta["resourceVersion"] = resourceVersion
	}
	return json.Marshal(map[string]any{"metadata": meta})
}
