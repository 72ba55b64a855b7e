package benchgen

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1defaults "k8s.io/kubernetes/pkg/apis/core/v1"
	"k8s.io/kubernetes/pkg/apis/core/v1/helper/qos"
	"k8s.io/utils/ptr"
)

// Values the API server, its admission plugins and the kubelet put in pods.
const (
	// PauseImage is the image of every stored pod's container (the
	// generator's pods have none; the API server requires one).
	PauseImage = "registry.k8s.io/pause:3.10"
	// pauseImageID is the image's digest as a container runtime reports it.
	pauseImageID = "registry.k8s.io/pause@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a"
	// ServiceAccountVolumePrefix starts the name of the projected token
	// volume of the ServiceAccount admission plugin.
	ServiceAccountVolumePrefix = "kube-api-access-"
	// serviceAccountMountPath is where that volume is mounted.
	serviceAccountMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// defaultServiceAccount is the ServiceAccount of pods that name none.
	defaultServiceAccount = "default"
	// defaultTolerationSeconds is the DefaultTolerationSeconds plugin's
	// --default-not-ready-toleration-seconds and -unreachable- default.
	defaultTolerationSeconds = 300
	// tokenExpirationSeconds is the token projection's expiration as the
	// ServiceAccount plugin sets it (one hour and seven seconds).
	tokenExpirationSeconds = 3607
	// nameAlphabet is the alphabet of the API server's random name
	// suffixes (k8s.io/apimachinery/pkg/util/rand).
	nameAlphabet = "bcdfghjklmnpqrstvwxz2456789"
)

// Submitted returns a copy of generated pod p as its controller submits it
// to the API server: with the container image, without UID, status or
// server-set metadata.
func Submitted(p *corev1.Pod) *corev1.Pod {
	out := p.DeepCopy()
	out.UID, out.ResourceVersion, out.Generation, out.ManagedFields = "", "", 0, nil
	out.Status = corev1.PodStatus{}
	for i := range out.Spec.Containers {
		out.Spec.Containers[i].Image = PauseImage
	}
	return out
}

// Admit does to a defaulted pod what kube-apiserver's default admission
// plugins and pod creation do:
//
//   - ServiceAccount: serviceAccountName "default" and the projected token
//     volume tokenVolume, mounted read-only at
//     /var/run/secrets/kubernetes.io/serviceaccount in every container;
//   - DefaultTolerationSeconds: tolerations of the node.kubernetes.io/not-ready
//     and unreachable NoExecute taints for 300 s;
//   - Priority: priority 0 and preemptionPolicy PreemptLowerPriority (no
//     PriorityClass is the global default);
//   - creation: phase Pending and the pod's QoS class.
func Admit(p *corev1.Pod, tokenVolume string) {
	p.Spec.ServiceAccountName = defaultServiceAccount
	p.Spec.DeprecatedServiceAccount = defaultServiceAccount
	mount := corev1.VolumeMount{Name: tokenVolume, ReadOnly: true, MountPath: serviceAccountMountPath}
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].VolumeMounts = append(p.Spec.Containers[i].VolumeMounts, mount)
	}
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{
		Name: tokenVolume, VolumeSource: corev1.VolumeSource{Projected: tokenVolumeSource()},
	})
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{
			Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute,
			TolerationSeconds: ptr.To[int64](defaultTolerationSeconds),
		})
	}
	p.Spec.Priority = ptr.To[int32](0)
	p.Spec.PreemptionPolicy = ptr.To(corev1.PreemptLowerPriority)
	p.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: qos.GetPodQOS(p)}
}

// tokenVolumeSource is the ServiceAccount plugin's projected volume: the
// token, the cluster's CA and the namespace.
func tokenVolumeSource() *corev1.ProjectedVolumeSource {
	return &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To(corev1.ProjectedVolumeSourceDefaultMode),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
				Path: "token", ExpirationSeconds: ptr.To[int64](tokenExpirationSeconds),
			}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{
				Items: []corev1.DownwardAPIVolumeFile{{
					Path:     "namespace",
					FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
				}},
			}},
		},
	}
}

// tokenVolumeName draws the name of pod number i's token volume.
func (s *storer) tokenVolumeName(i int) string {
	b := []byte(ServiceAccountVolumePrefix + "xxxxx")
	for k := range 5 {
		b[len(ServiceAccountVolumePrefix)+k] = nameAlphabet[s.rng.u(streamTokenVolume, i, uint64(k), int64(len(nameAlphabet)))]
	}
	return string(b)
}

// NodeIP is the InternalIP of node j (as Register sets it).
func NodeIP(j int) string {
	return fmt.Sprintf("10.%d.%d.%d", 128+(j+1)>>16, (j+1)>>8&0xff, (j+1)&0xff)
}

// PodIP is the IP of the q-th pod on node j: node j has the pod CIDR
// 10.<j/256>.<j%256>.0/24.
func PodIP(j, q int) string { return fmt.Sprintf("10.%d.%d.%d", j>>8, j&0xff, q+1) }

// RunningStatus is the status a kubelet writes for pod p, admitted, once
// its container runs on the node with IP hostIP: phase Running, the five
// conditions true, the container's status with its image, mounts and
// resources, the IPs and the start time at.
func RunningStatus(p *corev1.Pod, hostIP, podIP string, at metav1.Time) corev1.PodStatus {
	st := corev1.PodStatus{
		ObservedGeneration: p.Generation,
		Phase:              corev1.PodRunning,
		HostIP:             hostIP, HostIPs: []corev1.HostIP{{IP: hostIP}},
		PodIP: podIP, PodIPs: []corev1.PodIP{{IP: podIP}},
		StartTime: ptr.To(at),
		QOSClass:  qos.GetPodQOS(p),
	}
	for _, t := range []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized,
		corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		st.Conditions = append(st.Conditions, corev1.PodCondition{
			Type: t, Status: corev1.ConditionTrue, LastTransitionTime: at, ObservedGeneration: p.Generation,
		})
	}
	for i, c := range p.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, runningContainer(c, containerID(p.UID, i), at))
	}
	return st
}

// containerID is the runtime's ID of container i of the pod with uid.
func containerID(uid types.UID, i int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%d", uid, i))
	return "containerd://" + hex.EncodeToString(sum[:])
}

// runningContainer is the status of container c, running since at.
func runningContainer(c corev1.Container, id string, at metav1.Time) corev1.ContainerStatus {
	mounts := make([]corev1.VolumeMountStatus, len(c.VolumeMounts))
	for k, m := range c.VolumeMounts {
		mounts[k] = corev1.VolumeMountStatus{Name: m.Name, MountPath: m.MountPath, ReadOnly: m.ReadOnly,
			RecursiveReadOnly: ptr.To(corev1.RecursiveReadOnlyDisabled)}
	}
	return corev1.ContainerStatus{
		Name:  c.Name,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at}},
		Ready: true, Started: ptr.To(true),
		Image: c.Image, ImageID: pauseImageID,
		ContainerID:        id,
		AllocatedResources: c.Resources.Requests.DeepCopy(),
		Resources:          &corev1.ResourceRequirements{Requests: c.Resources.Requests.DeepCopy()},
		VolumeMounts:       mounts,
		User: &corev1.ContainerUser{Linux: &corev1.LinuxContainerUser{
			UID: 65535, GID: 65535, SupplementalGroups: []int64{65535},
		}},
	}
}

// UnschedulableStatus is the status of pod p, admitted, after the
// scheduler found none of the cluster's nodes fit it at time at.
func UnschedulableStatus(p *corev1.Pod, nodes int, at metav1.Time) corev1.PodStatus {
	return corev1.PodStatus{
		Phase: corev1.PodPending,
		Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: fmt.Sprintf("0/%d nodes are available: %d Insufficient cpu. preemption: 0/%d nodes are available: "+
				"%d No preemption victims found for incoming pod.", nodes, nodes, nodes, nodes),
			LastTransitionTime: at, ObservedGeneration: p.Generation,
		}},
		QOSClass: qos.GetPodQOS(p),
	}
}

// storePod gives pod number i (of all pods) its stored form up to its
// status: server metadata, image, defaults, admission and the managed
// fields of its creation by its ReplicaSet's controller.
func (s *storer) storePod(p *corev1.Pod, kind uint64, i int) error {
	p.OwnerReferences[0].UID = s.uids[p.OwnerReferences[0].UID]
	s.meta(&p.ObjectMeta, kind, i, 1)
	for k := range p.Spec.Containers {
		p.Spec.Containers[k].Image = PauseImage
	}
	corev1defaults.SetObjectDefaults_Pod(p)
	if err := s.fields.podCreated(p); err != nil {
		return err
	}
	Admit(p, s.tokenVolumeName(i))
	return nil
}

// runningPods stores the running pods: created, bound, run by the kubelet.
func (s *storer) runningPods() error {
	m := s.c.Params.M
	return storeEach(s, s.c.RunningPods, func(i int, p *corev1.Pod) error {
		if err := s.storePod(p, uidRunningPod, i); err != nil {
			return err
		}
		j, q := i/m, i%m
		p.Status = RunningStatus(p, NodeIP(j), PodIP(j, q), later(p.CreationTimestamp, 2*time.Second))
		return s.fields.podRunning(p, PodIP(j, q))
	})
}

// pendingPods stores the pending pods: created, found unschedulable.
func (s *storer) pendingPods() error {
	offset := len(s.c.RunningPods)
	return storeEach(s, s.c.PendingPods, func(i int, p *corev1.Pod) error {
		if err := s.storePod(p, uidPendingPod, offset+i); err != nil {
			return err
		}
		p.Status = UnschedulableStatus(p, len(s.c.Nodes), later(p.CreationTimestamp, time.Second))
		return s.fields.podUnschedulable(p)
	})
}
