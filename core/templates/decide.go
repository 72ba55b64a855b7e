// Package templates decides what a new node of a group looks like, as
// Cluster Autoscaler does: a sanitized copy of one of the group's live
// nodes when it has a good one (its labels and taints as the kubelet and
// bootstrap set them, its real allocatable, its DaemonSet and static pods);
// else the last such copy while it is fresh (a group scaled to zero); else
// the provider's template, built from cloud metadata such as an Auto
// Scaling Group's tags and instance type.
//
// Decide is a pure function of what the node loop observed; the loop keeps
// the cache entry it returns until the next iteration.
package templates

import (
	"errors"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/clusterstate"
)

// Source says where a template came from.
type Source string

const (
	// FromNode: a live node of the group, sanitized.
	FromNode Source = "node"
	// FromCache: the last template made from a live node of the group,
	// kept while the group has no good node.
	FromCache Source = "cache"
	// FromProvider: the provider's TemplateNodeInfo (cloud metadata).
	FromProvider Source = "provider"
)

// Entry is a template made from a live node, kept between iterations.
// Pods are the node's own static and DaemonSet pods; pods of DaemonSets
// created later are added when the entry is used.
type Entry struct {
	Node *corev1.Node
	Pods []*corev1.Pod
	// From is the name of the live node, Seen when it was last a good
	// example.
	From string
	Seen time.Time
}

// Input is what Decide reads.
type Input struct {
	Group string
	// Nodes are the group's live nodes; ExamplePods are the pods bound to
	// the one Need names as the example.
	Nodes       []*corev1.Node
	ExamplePods []*corev1.Pod
	// Cached is the group's entry from the last iteration, or nil.
	Cached *Entry
	// Provider is the provider's template, read only when Need says so
	// (neither a live node nor the cache serves).
	Provider   *cloudprovider.NodeTemplate
	DaemonSets []*appsv1.DaemonSet
	Taints     clusterstate.Taints
	Now        time.Time
	// CacheTTL (--node-info-cache-expire-time) is how long an entry serves
	// after it was last seen; an older entry is dropped.
	CacheTTL time.Duration
}

// Template is the decision: the node and the pods it starts with, where
// they came from, and the cache entry to keep for the group (nil: none).
type Template struct {
	Node   *corev1.Node
	Pods   []*corev1.Pod
	Source Source
	// From names the live node a FromNode or FromCache template was made
	// from.
	From string
	Keep *Entry
}

// Needs is what Decide reads besides the plain fields of its input: the
// pods of the live node it takes for an example (Example; "" when no live
// node serves), or the provider's template (Provider: neither a live node
// nor the cache serves). Asking the provider may cost a cloud call, so the
// caller fetches only what is needed.
type Needs struct {
	Example  string
	Provider bool
}

// Need says what Decide will read of in besides Nodes, Cached and the
// options.
func Need(in Input) Needs {
	if ex := pickExample(in.Nodes, in.Taints, in.Now); ex != nil {
		return Needs{Example: ex.Name}
	}
	return Needs{Provider: validCache(in) == nil}
}

// validCache is the cached entry unless it expired.
func validCache(in Input) *Entry {
	if in.Cached != nil && in.Now.Sub(in.Cached.Seen) > in.CacheTTL {
		return nil
	}
	return in.Cached
}

// Decide returns the group's template.
func Decide(in Input) (Template, error) {
	cached := validCache(in)
	if ex := pickExample(in.Nodes, in.Taints, in.Now); ex != nil {
		node := sanitizeNode(ex, NodeName(in.Group), in.Taints)
		e := &Entry{Node: node, Pods: startingPods(in.ExamplePods, node.Name), From: ex.Name, Seen: in.Now}
		return Template{Node: node, Pods: withDaemonSets(node, e.Pods, in.DaemonSets), Source: FromNode, From: e.From, Keep: e}, nil
	}
	if cached != nil {
		return Template{Node: cached.Node, Pods: withDaemonSets(cached.Node, cached.Pods, in.DaemonSets), Source: FromCache,
			From: cached.From, Keep: cached}, nil
	}
	t := in.Provider
	if t == nil || t.Node == nil {
		return Template{}, errors.New("the provider returned no template node")
	}
	node := t.Node
	if kept := forTemplate(in.Taints, node.Spec.Taints); len(kept) != len(node.Spec.Taints) {
		node = node.DeepCopy()
		node.Spec.Taints = kept
	}
	return Template{Node: node, Pods: withDaemonSets(node, t.Pods, in.DaemonSets), Source: FromProvider}, nil
}

// NodeName is the name of a template made from a live node of group
// (Cluster Autoscaler's, without its random suffix).
func NodeName(group string) string { return "template-node-for-" + group }
