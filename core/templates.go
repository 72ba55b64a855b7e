package core

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/templates"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// groupTemplateState is what the loop keeps of a group's template between
// iterations: the entry templates.Decide keeps, and where the last template
// came from (to log changes only).
type groupTemplateState struct {
	keep   *templates.Entry
	source templates.Source
	from   string
}

// groupTemplate is the node a group would add (templates.Decide): made
// from one of its live nodes, the cached copy of one, or the provider's
// template. The loop keeps the decision's cache entry.
func (ob *observer) groupTemplate(ctx context.Context, o *observation, g cloudprovider.NodeGroup, nodes []*corev1.Node, daemonSets []*appsv1.DaemonSet) (*simulator.NodeTemplate, error) {
	id := g.Id()
	prev := ob.templates[id]
	in := templates.Input{Group: id, Nodes: nodes, Cached: prev.keep, DaemonSets: daemonSets, Taints: ob.opts.Taints,
		Now: o.now, CacheTTL: ob.opts.NodeInfoCacheExpireTime}
	need := templates.Need(in)
	if need.Example != "" {
		in.ExamplePods = o.podsOf(need.Example)
	}
	if need.Provider {
		var err error
		if in.Provider, err = g.TemplateNodeInfo(ctx); err != nil {
			return nil, fmt.Errorf("node group %s: template node: %w", id, err)
		}
	}
	t, err := templates.Decide(in)
	if err != nil {
		return nil, fmt.Errorf("node group %s: %w", id, err)
	}
	ob.templates[id] = groupTemplateState{keep: t.Keep, source: t.Source, from: t.From}
	if t.Source != prev.source || t.From != prev.from {
		klog.FromContext(ctx).V(2).Info("Node group template", "nodeGroup", id, "source", t.Source, "fromNode", t.From)
	}
	return simulator.NewNodeTemplate(id, t.Node, t.Pods)
}

// forgetTemplates drops what is kept of groups the provider no longer has.
func (ob *observer) forgetTemplates(groups []*groupObservation) {
	seen := make(map[string]bool, len(groups))
	for _, g := range groups {
		seen[g.group.Id()] = true
	}
	for id := range ob.templates {
		if !seen[id] {
			delete(ob.templates, id)
		}
	}
}

// podsOf returns the pods the snapshot has on a node.
func (o *observation) podsOf(node string) []*corev1.Pod {
	ni := o.snapshot.NodeInfo(node)
	if ni == nil {
		return nil
	}
	pods := make([]*corev1.Pod, 0, len(ni.GetPods()))
	for _, pi := range ni.GetPods() {
		pods = append(pods, pi.GetPod())
	}
	return pods
}
