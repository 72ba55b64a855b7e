package benchgen

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Labels, taint and fixed values of the generated objects.
const (
	LabelHostname  = corev1.LabelHostname     // kubernetes.io/hostname
	LabelZone      = corev1.LabelTopologyZone // topology.kubernetes.io/zone
	LabelOS        = corev1.LabelOSStable     // kubernetes.io/os
	LabelNodeGroup = "cabench.io/nodegroup"   // node group id of a node
	LabelApp       = "app"                    // app label of every pod
	TaintKey       = "cabench.io/dedicated"   // key of the dedicated taint
	TaintValue     = "batch"                  // value of the dedicated taint
	Namespace      = metav1.NamespaceDefault  // namespace of pods and RSs
	ContainerName  = "c"                      // the only container of a pod
	MaxPodsPerNode = 110                      // pods capacity of every node
	rsAPIVersion   = "apps/v1"                // owner reference API version
	rsKind         = "ReplicaSet"             // owner reference kind
	mebibyte       = int64(1) << 20           // bytes in one Mi
	osLinux        = "linux"                  // value of kubernetes.io/os
	uidPrefix      = "uid-"                   // UIDs are uid-<name>
	unschedulable  = corev1.PodReasonUnschedulable
)

// creationTime is the creationTimestamp of every object.
func creationTime() metav1.Time {
	return metav1.NewTime(time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC))
}

// uid returns the UID of the object called name.
func uid(name string) types.UID { return types.UID(uidPrefix + name) }

// meta returns the object metadata shared by every generated object.
func (b *builder) meta(name, namespace string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:              name,
		Namespace:         namespace,
		UID:               uid(name),
		CreationTimestamp: b.ts,
		Labels:            labels,
	}
}

// cpuQuantity returns milli millicores.
func cpuQuantity(milli int64) resource.Quantity {
	return *resource.NewMilliQuantity(milli, resource.DecimalSI)
}

// memQuantity returns mi MiB.
func memQuantity(mi int64) resource.Quantity {
	return *resource.NewQuantity(mi*mebibyte, resource.BinarySI)
}

// requests returns a new cpu+memory resource list.
func requests(cpuMilli, memMi int64) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    cpuQuantity(cpuMilli),
		corev1.ResourceMemory: memQuantity(memMi),
	}
}

// dedicatedTaint returns the taint of the tainted node groups.
func dedicatedTaint() corev1.Taint {
	return corev1.Taint{Key: TaintKey, Value: TaintValue, Effect: corev1.TaintEffectNoSchedule}
}

// dedicatedToleration returns a toleration of dedicatedTaint.
func dedicatedToleration() corev1.Toleration {
	return corev1.Toleration{
		Key:      TaintKey,
		Operator: corev1.TolerationOpEqual,
		Value:    TaintValue,
		Effect:   corev1.TaintEffectNoSchedule,
	}
}

// ownerRef returns a controller reference to the ReplicaSet rs; controller
// must point to a true value owned by this reference alone.
func ownerRef(rs string, controller *bool) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: rsAPIVersion,
		Kind:       rsKind,
		Name:       rs,
		UID:        uid(rs),
		Controller: controller,
	}
}
