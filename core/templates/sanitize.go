package templates

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/daemon"

	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

// StabilizationDelay is how long a node must have been Ready before it
// serves as its group's example (Cluster Autoscaler's): a node that just
// came up may still miss labels or pods its bootstrap adds.
const StabilizationDelay = time.Minute

// pickExample returns the good example of the group with the lowest name,
// so that the template does not change between iterations without cause,
// or nil. A good example is Ready (Ready condition True, no startup taint)
// for StabilizationDelay, schedulable, and neither being deleted by the
// API nor tainted for removal by an autoscaler.
func pickExample(nodes []*corev1.Node, taints clusterstate.Taints, now time.Time) *corev1.Node {
	var best *corev1.Node
	for _, n := range nodes {
		if goodExample(n, taints, now) && (best == nil || n.Name < best.Name) {
			best = n
		}
	}
	return best
}

func goodExample(n *corev1.Node, taints clusterstate.Taints, now time.Time) bool {
	if n.DeletionTimestamp != nil || n.Spec.Unschedulable {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Key == scaledown.ToBeDeletedTaint {
			return false
		}
	}
	if ready, _ := taints.Readiness(n); !ready {
		return false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.LastTransitionTime.Add(StabilizationDelay).Before(now)
		}
	}
	return false
}

// sanitizeNode makes a new node of the example's shape named name: its
// labels (kubernetes.io/hostname set to name), taints that stay on a node
// (forTemplate), capacity, allocatable, conditions (without their times,
// so that a heartbeat does not change the template) and system info; not
// what identifies the machine (UID, providerID, pod CIDRs, addresses,
// machine and boot IDs, annotations), nor what the node gathered while it
// ran (images, volumes, cordon). The example is not changed.
func sanitizeNode(example *corev1.Node, name string, taints clusterstate.Taints) *corev1.Node {
	labels := maps.Clone(example.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[corev1.LabelHostname] = name
	st := example.Status.DeepCopy()
	st.Addresses, st.Images, st.VolumesInUse, st.VolumesAttached = nil, nil, nil, nil
	st.DaemonEndpoints = corev1.NodeDaemonEndpoints{}
	st.NodeInfo.MachineID, st.NodeInfo.SystemUUID, st.NodeInfo.BootID = "", "", ""
	for i := range st.Conditions {
		st.Conditions[i].LastHeartbeatTime, st.Conditions[i].LastTransitionTime = metav1.Time{}, metav1.Time{}
	}
	return &corev1.Node{
		TypeMeta:   example.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: forTemplate(taints, example.Spec.Taints)},
		Status:     *st,
	}
}

// forTemplate leaves out the taints a new node does not start with: the
// transient ones (clusterstate.Taints.ForTemplate) and the scale-down
// taints of tidal and Cluster Autoscaler.
func forTemplate(c clusterstate.Taints, taints []corev1.Taint) []corev1.Taint {
	return slices.DeleteFunc(c.ForTemplate(taints), func(t corev1.Taint) bool {
		return t.Key == scaledown.ToBeDeletedTaint || t.Key == scaledown.DeletionCandidateTaint
	})
}

// startingPods are copies, bound to node, of the example's pods a new node
// starts with: static (mirror) and DaemonSet pods not being deleted.
func startingPods(pods []*corev1.Pod, node string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if !isMirror(p) && daemonSetOf(p) == "" {
			continue
		}
		c := p.DeepCopy()
		c.ResourceVersion, c.ManagedFields = "", nil
		c.Spec.NodeName = node
		out = append(out, c)
	}
	return out
}

func isMirror(p *corev1.Pod) bool {
	_, ok := p.Annotations[corev1.MirrorPodAnnotationKey]
	return ok
}

// daemonSetOf is the UID of the DaemonSet that controls p, or "".
func daemonSetOf(p *corev1.Pod) string {
	if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "DaemonSet" && strings.HasPrefix(ref.APIVersion, "apps/") {
		return string(ref.UID)
	}
	return ""
}

// withDaemonSets returns pods plus a pod for every DaemonSet that has none
// among them and that the DaemonSet controller would run on node (decided
// by its own rule). pods is not changed.
func withDaemonSets(node *corev1.Node, pods []*corev1.Pod, daemonSets []*appsv1.DaemonSet) []*corev1.Pod {
	out := slices.Clip(pods)
	running := map[string]bool{}
	for _, p := range pods {
		if uid := daemonSetOf(p); uid != "" {
			running[uid] = true
		}
	}
	for _, ds := range daemonSets {
		if running[string(ds.UID)] {
			continue
		}
		if run, _ := daemon.NodeShouldRunDaemonPod(klog.Background(), node, ds); !run {
			continue
		}
		p := daemon.NewPod(ds, node.Name)
		p.Name = fmt.Sprintf("%s-%s", ds.Name, node.Name)
		p.UID = ds.UID
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(ds, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))}
		out = append(out, p)
	}
	return out
}
