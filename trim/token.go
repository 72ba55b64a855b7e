package trim

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// The ServiceAccount admission plugin names the projected token volume it
// adds to every pod kube-api-access-<5 random characters>, so that replicas
// of one workload, identical otherwise, differ in a volume and in every
// container's mount of it.
const (
	tokenVolumePrefix = "kube-api-access-"
	tokenSuffixLen    = 5
	// TokenVolumeName is the name Pod gives that volume in the cache. No
	// reader of cached pods needs the real one: the scheduler's volume
	// plugins and the drain rules look only at claims, disks, host paths
	// and emptyDir volumes; equivalence keys ignore projected volumes;
	// evictions name the pod; and tidal never writes a cached pod back.
	TokenVolumeName = "kube-api-access"
)

// canonicalTokenVolume renames the ServiceAccount admission's token volume
// of p, and its mounts, TokenVolumeName, so that replicas can share their
// volumes and containers (see Sharer). Only a projected volume with a
// service account token and the admission's name is renamed, and only when
// no other volume already has the name.
func canonicalTokenVolume(p *corev1.Pod) {
	vols := p.Spec.Volumes
	found := -1
	for i := range vols {
		switch {
		case vols[i].Name == TokenVolumeName:
			return
		case isAdmittedTokenVolume(&vols[i]):
			found = i
		}
	}
	if found < 0 {
		return
	}
	old := vols[found].Name
	vols[found].Name = TokenVolumeName
	renameMounts(p.Spec.InitContainers, old)
	renameMounts(p.Spec.Containers, old)
	for i := range p.Spec.EphemeralContainers {
		renameMountList(p.Spec.EphemeralContainers[i].VolumeMounts, old)
	}
}

// isAdmittedTokenVolume reports whether v is a token volume as the
// ServiceAccount admission adds it.
func isAdmittedTokenVolume(v *corev1.Volume) bool {
	suffix, ok := strings.CutPrefix(v.Name, tokenVolumePrefix)
	if !ok || len(suffix) != tokenSuffixLen || v.Projected == nil {
		return false
	}
	for _, src := range v.Projected.Sources {
		if src.ServiceAccountToken != nil {
			return true
		}
	}
	return false
}

func renameMounts(ctrs []corev1.Container, old string) {
	for i := range ctrs {
		renameMountList(ctrs[i].VolumeMounts, old)
	}
}

func renameMountList(mounts []corev1.VolumeMount, old string) {
	for i := range mounts {
		if mounts[i].Name == old {
			mounts[i].Name = TokenVolumeName
		}
	}
}
