// Package simtest shapes test objects as the API server stores them, for
// the tests of the decision packages: what admission, defaulting and
// controllers add to a pod, and the random order listers return.
package simtest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// suffixChars are the characters of generated name suffixes.
const suffixChars = "bcdfghjklmnpqrstvwxz2456789"

// Suffix is a random generated-name suffix of n characters.
func Suffix(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = suffixChars[r.IntN(len(suffixChars))]
	}
	return string(b)
}

// Admit changes p as admission and the API defaults change a pod created
// from a template: the defaulted fields, the two NoExecute tolerations of
// the DefaultTolerationSeconds admission (each with its own
// tolerationSeconds), the ServiceAccount admission's projected volume
// kube-api-access-<5 random characters> mounted in every container, a
// resourceVersion and managedFields. Every pointer is the pod's own, as in
// objects decoded from the API.
func Admit(p *corev1.Pod, r *rand.Rand) {
	s := &p.Spec
	s.RestartPolicy = corev1.RestartPolicyAlways
	s.TerminationGracePeriodSeconds = ptr.To[int64](corev1.DefaultTerminationGracePeriodSeconds)
	s.DNSPolicy = corev1.DNSClusterFirst
	s.SecurityContext = &corev1.PodSecurityContext{}
	s.SchedulerName = corev1.DefaultSchedulerName
	s.EnableServiceLinks = ptr.To(true)
	s.PreemptionPolicy = ptr.To(corev1.PreemptLowerPriority)
	if s.Priority == nil {
		s.Priority = ptr.To[int32](0)
	}
	s.ServiceAccountName, s.DeprecatedServiceAccount = "default", "default"
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		s.Tolerations = append(s.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)})
	}
	vol := "kube-api-access-" + Suffix(r, 5)
	s.Volumes = append(s.Volumes, serviceAccountVolume(vol))
	for i := range s.Containers {
		c := &s.Containers[i]
		if c.Image == "" {
			c.Image = "registry.example/app:1.0"
		}
		c.ImagePullPolicy = corev1.PullIfNotPresent
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: vol, ReadOnly: true,
			MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"})
	}
	if p.ResourceVersion == "" {
		p.ResourceVersion = "1"
	}
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate,
		APIVersion: "v1", Time: ptr.To(p.CreationTimestamp), FieldsType: "FieldsV1",
		FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:generateName":{},"f:labels":{},"f:ownerReferences":{}},"f:spec":{"f:containers":{}}}`)}}
}

func serviceAccountVolume(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o644),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](3607), Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}}}
}

// Shuffle puts s in a random order, as a lister returns objects.
func Shuffle[T any](r *rand.Rand, s []T) {
	r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
}

// AdmitAll admits every pod.
func AdmitAll(r *rand.Rand, pods []*corev1.Pod) {
	for _, p := range pods {
		Admit(p, r)
	}
}

// NewReplica is the n-th new replica of like's workload, admitted as the
// API server admits it: its own name, UID, version, creation time and
// random kube-api-access volume.
func NewReplica(like *corev1.Pod, n int, r *rand.Rand) *corev1.Pod {
	p := like.DeepCopy()
	p.Name, p.UID, p.ResourceVersion = fmt.Sprintf("%s-new-%d", like.Name, n), types.UID(fmt.Sprintf("uid-pod-%d", n)), fmt.Sprint(2_000_000+n)
	p.CreationTimestamp = metav1.NewTime(p.CreationTimestamp.Add(time.Duration(n) * time.Second))
	vol := "kube-api-access-" + Suffix(r, 5)
	for i, v := range p.Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") {
			p.Spec.Volumes[i].Name = vol
		}
	}
	for i := range p.Spec.Containers {
		for j, m := range p.Spec.Containers[i].VolumeMounts {
			if strings.HasPrefix(m.Name, "kube-api-access-") {
				p.Spec.Containers[i].VolumeMounts[j].Name = vol
			}
		}
	}
	return p
}
