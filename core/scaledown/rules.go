// Package scaledown decides which nodes can go: nodes whose utilization is
// below the threshold, whose pods may all be evicted, and whose pods all
// fit elsewhere (checked with the scheduler's own filters, with the
// removals already planned taken into account). Plan is a pure function of
// its input; the node loop tracks how long nodes stay unneeded, taints them
// and drains them.
package scaledown

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotations and taints honoured, with Cluster Autoscaler's keys so that
// users' manifests and tolerations carry over.
const (
	SafeToEvictAnnotation             = "cluster-autoscaler.kubernetes.io/safe-to-evict"
	SafeToEvictLocalVolumesAnnotation = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"
	ScaleDownDisabledAnnotation       = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
	// DoNotDisruptAnnotation is Karpenter's key, accepted as an alias: on
	// a node as scale-down-disabled=true, on a pod as safe-to-evict=false.
	DoNotDisruptAnnotation = "karpenter.sh/do-not-disrupt"
	// ToBeDeletedTaint (NoSchedule) marks a node being drained.
	ToBeDeletedTaint = "ToBeDeletedByClusterAutoscaler"
	// DeletionCandidateTaint (PreferNoSchedule) marks an unneeded node; its
	// value is the Unix time it became unneeded.
	DeletionCandidateTaint = "DeletionCandidateOfClusterAutoscaler"
	// mirrorPodAnnotation marks static pods' mirrors.
	mirrorPodAnnotation = corev1.MirrorPodAnnotationKey
)

// BlockingReason says why a pod keeps its node, in Cluster Autoscaler's
// terms.
type BlockingReason string

// Blocking reasons.
const (
	ControllerNotFound       BlockingReason = "ControllerNotFound"
	NotReplicated            BlockingReason = "NotReplicated"
	LocalStorageRequested    BlockingReason = "LocalStorageRequested"
	NotSafeToEvictAnnotation BlockingReason = "NotSafeToEvictAnnotation"
	UnmovableKubeSystemPod   BlockingReason = "UnmovableKubeSystemPod"
	NotEnoughPdb             BlockingReason = "NotEnoughPdb"
)

// Blocker is a pod that keeps its node, and why.
type Blocker struct {
	Pod    *corev1.Pod
	Reason BlockingReason
	// Detail adds what the reason needs (the PDB's name, the volume).
	Detail string
}

func (b *Blocker) String() string {
	s := fmt.Sprintf("pod %s/%s: %s", b.Pod.Namespace, b.Pod.Name, b.Reason)
	if b.Detail != "" {
		s += " (" + b.Detail + ")"
	}
	return s
}

// RuleOptions are the flags of the drainability rules.
type RuleOptions struct {
	// SkipNodesWithSystemPods keeps nodes running kube-system pods that are
	// not DaemonSet pods and have no PDB.
	SkipNodesWithSystemPods bool
	// SkipNodesWithLocalStorage keeps nodes running pods with emptyDir or
	// hostPath volumes, unless the pod is annotated safe to evict or lists
	// the volumes in safe-to-evict-local-volumes.
	SkipNodesWithLocalStorage bool
	// SkipNodesWithCustomControllerPods: when set, only pods owned by a
	// known controller (ReplicaSet, ReplicationController, StatefulSet, Job)
	// that exists count as replicated; when not, any controller does.
	SkipNodesWithCustomControllerPods bool
}

// Owners are what the caller found of pods' controllers: the kinds it
// looks up (Kinds), and which controllers of those kinds exist (Existing).
type Owners struct {
	Kinds    map[string]bool
	Existing map[OwnerKey]bool
}

// OwnerKey names a controller.
type OwnerKey struct{ Kind, Namespace, Name string }

// ControllerKinds are the kinds of controllers whose pods a drain may move
// (they are recreated elsewhere): Cluster Autoscaler's list.
func ControllerKinds() map[string]bool {
	return map[string]bool{"ReplicaSet": true, "ReplicationController": true, "StatefulSet": true, "Job": true}
}

// Exists tells whether a pod's controller exists; known is false for kinds
// the caller does not look up.
func (o Owners) Exists(namespace string, ref metav1.OwnerReference) (exists, known bool) {
	if !o.Kinds[ref.Kind] {
		return false, false
	}
	return o.Existing[OwnerKey{Kind: ref.Kind, Namespace: namespace, Name: ref.Name}], true
}

// NodePods sorts a node's pods by what a drain does with them.
type NodePods struct {
	// ToMove are evicted and must fit elsewhere.
	ToMove []*corev1.Pod
	// DaemonSet pods are evicted last, best-effort, and need no room.
	DaemonSet []*corev1.Pod
	// Blocker, when set, keeps the node.
	Blocker *Blocker
}

// ClassifyPods applies the drainability rules, in Cluster Autoscaler's
// order, to every pod of a node. hasPDB tells whether a PDB covers a pod.
func ClassifyPods(pods []*corev1.Pod, opts RuleOptions, owners Owners, hasPDB func(*corev1.Pod) bool, now time.Time) NodePods {
	var out NodePods
	for _, p := range pods {
		switch kind, blocker := classify(p, opts, owners, hasPDB, now); kind {
		case podIgnored:
		case podDaemonSet:
			out.DaemonSet = append(out.DaemonSet, p)
		case podMovable:
			out.ToMove = append(out.ToMove, p)
		case podBlocking:
			if out.Blocker == nil {
				out.Blocker = blocker
			}
		}
	}
	return out
}

type podKind int

const (
	podIgnored podKind = iota
	podDaemonSet
	podMovable
	podBlocking
)

func classify(p *corev1.Pod, opts RuleOptions, owners Owners, hasPDB func(*corev1.Pod) bool, now time.Time) (podKind, *Blocker) {
	block := func(r BlockingReason, detail string) (podKind, *Blocker) {
		return podBlocking, &Blocker{Pod: p, Reason: r, Detail: detail}
	}
	if kind, stays := leftBehind(p, now); stays {
		return kind, nil
	}
	if p.Annotations[SafeToEvictAnnotation] == "true" {
		return podMovable, nil
	}
	if r, detail := replicated(p, opts, owners); r != "" {
		return block(r, detail)
	}
	if opts.SkipNodesWithSystemPods && p.Namespace == metav1.NamespaceSystem && !hasPDB(p) {
		return block(UnmovableKubeSystemPod, "no PodDisruptionBudget covers it")
	}
	if p.Annotations[SafeToEvictAnnotation] == "false" {
		return block(NotSafeToEvictAnnotation, SafeToEvictAnnotation+"=false")
	}
	if p.Annotations[DoNotDisruptAnnotation] == "true" {
		return block(NotSafeToEvictAnnotation, DoNotDisruptAnnotation+"=true")
	}
	if opts.SkipNodesWithLocalStorage {
		if v := unlistedLocalVolume(p); v != "" {
			return block(LocalStorageRequested, "volume "+v)
		}
	}
	return podMovable, nil
}

// leftBehind reports whether a drain leaves p where it is, and how: mirror,
// finished and long-terminating pods are ignored, DaemonSet pods are not
// moved.
func leftBehind(p *corev1.Pod, now time.Time) (podKind, bool) {
	switch {
	case IsMirror(p), isLongTerminating(p, now), IsTerminal(p):
		return podIgnored, true
	case IsDaemonSetPod(p):
		return podDaemonSet, true
	}
	return podMovable, false
}

// MustMove reports whether a drain of p's node would have to move p (it is
// not a mirror, DaemonSet, finished or long-terminating pod).
func MustMove(p *corev1.Pod, now time.Time) bool {
	_, left := leftBehind(p, now)
	return !left
}

// replicated checks the pod has a controller that will recreate it.
func replicated(p *corev1.Pod, opts RuleOptions, owners Owners) (BlockingReason, string) {
	ref := controllerOf(p)
	if ref == nil {
		return NotReplicated, "no controller would recreate it"
	}
	exists, known := owners.Exists(p.Namespace, *ref)
	switch {
	case known && !exists:
		return ControllerNotFound, fmt.Sprintf("%s %s not found", ref.Kind, ref.Name)
	case !known && opts.SkipNodesWithCustomControllerPods:
		return NotReplicated, fmt.Sprintf("owned by %s %s, not a controller tidal knows", ref.Kind, ref.Name)
	}
	return "", ""
}

// unlistedLocalVolume returns an emptyDir (not in memory) or hostPath
// volume the pod does not list as safe to evict, or "".
func unlistedLocalVolume(p *corev1.Pod) string {
	var allowed map[string]bool
	for _, v := range p.Spec.Volumes {
		if v.HostPath == nil && (v.EmptyDir == nil || v.EmptyDir.Medium == corev1.StorageMediumMemory) {
			continue
		}
		if allowed == nil {
			allowed = map[string]bool{}
			for _, name := range strings.Split(p.Annotations[SafeToEvictLocalVolumesAnnotation], ",") {
				allowed[strings.TrimSpace(name)] = true
			}
		}
		if !allowed[v.Name] {
			return v.Name
		}
	}
	return ""
}

// Disabled tells whether an annotation keeps the node out of scale-down
// and consolidation (scale-down-disabled, or Karpenter's do-not-disrupt),
// and names it.
func Disabled(n *corev1.Node) (string, bool) {
	for _, key := range []string{ScaleDownDisabledAnnotation, DoNotDisruptAnnotation} {
		if n.Annotations[key] == "true" {
			return key + "=true", true
		}
	}
	return "", false
}

// IsDaemonSetPod reports whether a DaemonSet controls the pod.
func IsDaemonSetPod(p *corev1.Pod) bool {
	ref := controllerOf(p)
	return ref != nil && ref.Kind == "DaemonSet"
}

// controllerOf is the pod's controller reference, without a copy.
func controllerOf(p *corev1.Pod) *metav1.OwnerReference {
	for i := range p.OwnerReferences {
		if c := p.OwnerReferences[i].Controller; c != nil && *c {
			return &p.OwnerReferences[i]
		}
	}
	return nil
}

// IsMirror reports whether the pod is a static pod's mirror.
func IsMirror(p *corev1.Pod) bool {
	_, ok := p.Annotations[mirrorPodAnnotation]
	return ok
}

// isLongTerminating: a pod being deleted past its grace period (plus a
// minute) holds nothing a drain must wait for.
func isLongTerminating(p *corev1.Pod, now time.Time) bool {
	t, ok := longTerminatingAfter(p)
	return ok && now.After(t)
}

// longTerminatingAfter is the time after which a pod being deleted is long
// terminating; false when it is not being deleted.
func longTerminatingAfter(p *corev1.Pod) (time.Time, bool) {
	if p.DeletionTimestamp == nil {
		return time.Time{}, false
	}
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if p.DeletionGracePeriodSeconds != nil {
		grace = *p.DeletionGracePeriodSeconds
	}
	return p.DeletionTimestamp.Add(time.Duration(grace)*time.Second + time.Minute), true
}

// IsTerminal reports whether the pod has ended (Succeeded or Failed).
func IsTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}
