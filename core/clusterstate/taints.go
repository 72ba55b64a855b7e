package clusterstate

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

// Cluster Autoscaler's taint prefixes. A taint whose key starts with one of
// the first two is a startup taint; with the third, a status taint.
const (
	StartupTaintPrefix = "startup-taint.cluster-autoscaler.kubernetes.io/"
	// IgnoreTaintPrefix is the older name of StartupTaintPrefix.
	IgnoreTaintPrefix = "ignore-taint.cluster-autoscaler.kubernetes.io/"
	StatusTaintPrefix = "status-taint.cluster-autoscaler.kubernetes.io/"
)

// Taints the cloud controller manager puts on nodes (k8s.io/cloud-provider's
// names).
const (
	TaintCloudUninitialized = "node.cloudprovider.kubernetes.io/uninitialized"
	TaintCloudShutdown      = "node.cloudprovider.kubernetes.io/shutdown"
)

// Taints says how the node loop treats transient taints.
//
// A startup taint means the node has not finished starting: it counts as
// not ready (an upcoming node of its group while within the provision
// time), and pending pods are not placed on it. Startup taints are those
// of Kubernetes that go once a node is up (not-ready, unreachable,
// network-unavailable, the cloud's uninitialized), every taint whose key
// starts with StartupTaintPrefix or IgnoreTaintPrefix, and the keys of
// Startup.
//
// A status taint keeps pods off a node for now, but the node counts as
// ready: pods that need room elsewhere get a scale-up. Status taints are
// every taint whose key starts with StatusTaintPrefix, and the keys of
// Status.
//
// A group's template node carries neither, nor any taint Kubernetes derives
// from a node's conditions: a new node starts without them.
type Taints struct {
	// Startup holds the keys of --startup-taint and --ignore-taint.
	Startup []string
	// Status holds the keys of --status-taint.
	Status []string
	// GPULabel is the cloud provider's label of GPU nodes
	// (CloudProvider.GPULabel). A node carrying it is not ready until it
	// offers cloudprovider.ResourceNvidiaGPU: its device plugin has not
	// started yet, as Cluster Autoscaler's GPU processor judges.
	GPULabel string
}

// IsStartup reports whether key is a startup taint's.
func (c Taints) IsStartup(key string) bool {
	switch key {
	case corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable, corev1.TaintNodeNetworkUnavailable, TaintCloudUninitialized:
		return true
	}
	return strings.HasPrefix(key, StartupTaintPrefix) || strings.HasPrefix(key, IgnoreTaintPrefix) || slices.Contains(c.Startup, key)
}

// IsStatus reports whether key is a status taint's.
func (c Taints) IsStatus(key string) bool {
	return strings.HasPrefix(key, StatusTaintPrefix) || slices.Contains(c.Status, key)
}

// isCondition reports whether Kubernetes puts taints with key on nodes
// because of their conditions or state.
func isCondition(key string) bool {
	switch key {
	case corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable, corev1.TaintNodeUnschedulable,
		corev1.TaintNodeMemoryPressure, corev1.TaintNodeDiskPressure, corev1.TaintNodePIDPressure,
		corev1.TaintNodeNetworkUnavailable, corev1.TaintNodeOutOfService, TaintCloudUninitialized, TaintCloudShutdown:
		return true
	}
	return false
}

// ForTemplate returns the taints a new node of a group has at first, as
// opposed to taints that come and go: taints without startup, status and
// condition taints. taints is not changed.
func (c Taints) ForTemplate(taints []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range taints {
		if !c.IsStartup(t.Key) && !c.IsStatus(t.Key) && !isCondition(t.Key) {
			out = append(out, t)
		}
	}
	return out
}

// Readiness says whether node can run pods now: its Ready condition is True
// and it has no startup taint. When it cannot, why says what holds it, in
// words for a log or a status.
func (c Taints) Readiness(node *corev1.Node) (ready bool, why string) {
	cond := readyCondition(node)
	if cond == nil {
		return false, "no Ready condition"
	}
	if cond.Status != corev1.ConditionTrue {
		return false, fmt.Sprintf("Ready condition is %s", cond.Status)
	}
	for _, t := range node.Spec.Taints {
		if c.IsStartup(t.Key) {
			return false, fmt.Sprintf("startup taint %s:%s", t.Key, t.Effect)
		}
	}
	if _, gpu := node.Labels[c.GPULabel]; gpu && c.GPULabel != "" {
		if q, ok := node.Status.Allocatable[cloudprovider.ResourceNvidiaGPU]; !ok || q.IsZero() {
			return false, fmt.Sprintf("GPU node (label %s) with no %s allocatable yet", c.GPULabel, cloudprovider.ResourceNvidiaGPU)
		}
	}
	return true, ""
}

// Observe is what the cluster state needs of a node: a node with a startup
// taint is not ready, whatever its Ready condition says.
func (c Taints) Observe(node *corev1.Node) NodeObservation {
	ready, why := c.Readiness(node)
	return NodeObservation{Name: node.Name, Ready: ready, NotReady: why, Created: node.CreationTimestamp.Time}
}

func readyCondition(node *corev1.Node) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}
