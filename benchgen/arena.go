package benchgen

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// arenaBlock is how many pods one block of a podArena holds.
const arenaBlock = 1024

// podArena allocates the fixed-size parts of n pods in blocks of
// arenaBlock pods. Every pod gets its own elements; slices handed out have
// their capacity capped so that appending to one pod's slice never touches
// another pod. A block is one allocation: it is garbage once none of its
// pods is referenced, so a consumer that drops the pods it is done with
// (Store's transform, loading a cluster as informers do) frees the
// generated cluster as it goes, not only at the end.
type podArena struct {
	blocks []*podBlock
}

type podBlock struct {
	pods       [arenaBlock]corev1.Pod
	containers [arenaBlock]corev1.Container
	owners     [arenaBlock]metav1.OwnerReference
	controller [arenaBlock]bool
}

// newPodArena returns an arena for n pods.
func newPodArena(n int) *podArena {
	return &podArena{blocks: make([]*podBlock, (n+arenaBlock-1)/arenaBlock)}
}

// pod returns pod i with metadata, one container with the given requests and
// a controller reference to the ReplicaSet rs.
func (a *podArena) pod(b *builder, i int, name, app, rs string, req corev1.ResourceList) *corev1.Pod {
	blk := a.blocks[i/arenaBlock]
	if blk == nil {
		blk = new(podBlock)
		a.blocks[i/arenaBlock] = blk
	}
	k := i % arenaBlock
	p := &blk.pods[k]
	p.ObjectMeta = b.meta(name, Namespace, map[string]string{LabelApp: app})
	blk.controller[k] = true
	blk.owners[k] = ownerRef(rs, &blk.controller[k])
	p.OwnerReferences = blk.owners[k : k+1 : k+1]
	blk.containers[k] = corev1.Container{
		Name:      ContainerName,
		Resources: corev1.ResourceRequirements{Requests: req},
	}
	p.Spec.Containers = blk.containers[k : k+1 : k+1]
	return p
}
