package benchgen

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// replicaSets builds one ReplicaSet per owner that has pods: the running
// apps by index, then the pending groups by index.
func (b *builder) replicaSets(appPods []int, groups []PendingGroup) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for a, n := range appPods {
		if n > 0 {
			out = append(out, b.replicaSet(runningApp(a), n))
		}
	}
	for _, pg := range groups {
		if pg.Count > 0 {
			out = append(out, b.replicaSet(pg.App, pg.Count))
		}
	}
	return out
}

// replicaSet builds the ReplicaSet of app with the given number of pods.
func (b *builder) replicaSet(app string, pods int) *appsv1.ReplicaSet {
	name := rsName(app)
	replicas := int32(pods)
	return &appsv1.ReplicaSet{
		ObjectMeta: b.meta(name, Namespace, map[string]string{LabelApp: app}),
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelApp: app}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{LabelApp: app}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: ContainerName}}},
			},
		},
		Status: appsv1.ReplicaSetStatus{Replicas: replicas},
	}
}
