package benchgen

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podArena allocates the fixed-size parts of n pods in a few large blocks.
// Every pod gets its own elements; slices handed out have their capacity
// capped so that appending to one pod's slice never touches another pod.
type podArena struct {
	pods       []corev1.Pod
	containers []corev1.Container
	owners     []metav1.OwnerReference
	controller []bool
}

// newPodArena returns an arena for n pods.
func newPodArena(n int) *podArena {
	return &podArena{
		pods:       make([]corev1.Pod, n),
		containers: make([]corev1.Container, n),
		owners:     make([]metav1.OwnerReference, n),
		controller: make([]bool, n),
	}
}

// pod returns pod i with metadata, one container with the given requests and
// a controller reference to the ReplicaSet rs.
func (a *podArena) pod(b *builder, i int, name, app, rs string, req corev1.ResourceList) *corev1.Pod {
	p := &a.pods[i]
	p.ObjectMeta = b.meta(name, Namespace, map[string]string{LabelApp: app})
	a.controller[i] = true
	a.owners[i] = ownerRef(rs, &a.controller[i])
	p.OwnerReferences = a.owners[i : i+1 : i+1]
	a.containers[i] = corev1.Container{
		Name:      ContainerName,
		Resources: corev1.ResourceRequirements{Requests: req},
	}
	p.Spec.Containers = a.containers[i : i+1 : i+1]
	return p
}
