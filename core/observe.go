package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/simulator"
)

// observation is one iteration's view of the cluster and the cloud.
type observation struct {
	now time.Time
	// nodes are the nodes of the snapshot, so that what the loop counts
	// and what the simulation places pods on are one view.
	nodes []*corev1.Node
	// observed are the nodes as the cluster state sees them, by name: not
	// ready while their Ready condition is not True or a startup taint is
	// on.
	observed map[string]clusterstate.NodeObservation
	// pending are the pods waiting for a node, unschedulable counts those
	// the scheduler already failed to place, unprocessed those it has not
	// tried yet.
	pending                    []*corev1.Pod
	unschedulable, unprocessed int
	// headroom are the pictured pods that keep room for workloads'
	// headroom (they are among pending too).
	headroom []*corev1.Pod
	groups   []*groupObservation
	snapshot *simulator.Snapshot
	// groupOfNode maps node names to their group's ID ("" for nodes of no
	// group).
	groupOfNode map[string]string
}

type groupObservation struct {
	group     cloudprovider.NodeGroup
	target    int
	instances []cloudprovider.Instance
	template  *simulator.NodeTemplate
	// problem, when set, keeps the group from growing this iteration.
	problem string
}

// errCloud and errAPI classify failures for the errors metric.
var (
	errCloud = errors.New("cloud provider")
	errAPI   = errors.New("kubernetes api")
)

func errorType(err error) string {
	switch {
	case errors.Is(err, errCloud):
		return "cloudProviderError"
	case errors.Is(err, errAPI):
		return "apiCallError"
	}
	return "internalError"
}

func (l *NodeLoop) observe(ctx context.Context) (*observation, error) {
	o := &observation{now: l.clock.Now(), groupOfNode: map[string]string{}, observed: map[string]clusterstate.NodeObservation{}}
	if err := l.timed("cloudProviderRefresh", l.cfg.Cloud.Refresh); err != nil {
		return nil, fmt.Errorf("%w: refresh: %v", errCloud, err)
	}
	var err error
	if err := l.timed("snapshotSync", func() error { o.snapshot, err = l.live.Sync(); return err }); err != nil {
		return nil, fmt.Errorf("sync snapshot: %w", err)
	}
	for _, ni := range o.snapshot.Infos() {
		n := ni.Node()
		o.nodes = append(o.nodes, n)
		obs := l.opts.Taints.Observe(n)
		o.observed[n.Name] = obs
		if !obs.Ready {
			klog.FromContext(ctx).V(4).Info("Node not ready", "node", n.Name, "reason", obs.NotReady)
		}
	}
	pods, err := l.pods.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("%w: list pods: %v", errAPI, err)
	}
	for _, p := range pods {
		if IsPending(p) {
			o.pending = append(o.pending, p)
			if IsUnschedulable(p) {
				o.unschedulable++
			} else {
				o.unprocessed++
			}
		}
	}
	o.pending = append(o.pending, l.aheadPods(o.now)...)
	o.headroom = l.headroomPods()
	o.pending = append(o.pending, o.headroom...)
	daemonSets, err := l.daemonSets.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("%w: list daemonsets: %v", errAPI, err)
	}
	live := map[string][]*corev1.Node{}
	for _, n := range o.nodes {
		g, err := l.cfg.Cloud.NodeGroupForNode(n)
		if err != nil {
			klog.FromContext(ctx).V(2).Info("Node group of node unknown", "node", n.Name, "err", err)
			continue
		}
		if g != nil {
			o.groupOfNode[n.Name] = g.Id()
			live[g.Id()] = append(live[g.Id()], n)
		}
	}
	for _, g := range l.cfg.Cloud.NodeGroups() {
		o.groups = append(o.groups, l.observeGroup(ctx, o, g, live[g.Id()], daemonSets))
	}
	l.forgetTemplates(o.groups)
	return o, nil
}

// observeGroup reads a group from the cloud. A group the cloud cannot
// describe is kept, with the problem noted, so it is neither grown nor
// trusted this iteration.
func (l *NodeLoop) observeGroup(ctx context.Context, o *observation, g cloudprovider.NodeGroup, nodes []*corev1.Node, daemonSets []*appsv1.DaemonSet) *groupObservation {
	gro := &groupObservation{group: g}
	var err error
	if gro.target, err = g.TargetSize(); err != nil {
		gro.problem = fmt.Sprintf("cannot read target size: %v", err)
	} else if gro.instances, err = g.Nodes(); err != nil {
		gro.problem = fmt.Sprintf("cannot list instances: %v", err)
	} else if gro.template, err = l.groupTemplate(ctx, o, g, nodes, daemonSets); err != nil {
		gro.problem = fmt.Sprintf("cannot build template node: %v", err)
	}
	if gro.problem != "" {
		klog.FromContext(ctx).Error(err, "Node group not usable this iteration", "nodeGroup", g.Id())
	}
	return gro
}

// updateClusterState feeds the observation to the cluster state, cancels
// requests that will never be fulfilled, and judges the cluster's health.
func (l *NodeLoop) updateClusterState(ctx context.Context, o *observation) clusterstate.Health {
	start := l.clock.Now()
	defer func() { l.cfg.Metrics.observe("updateClusterState", l.clock.Since(start)) }()
	byProviderID := map[string]*corev1.Node{}
	var all []clusterstate.NodeObservation
	for _, n := range o.nodes {
		byProviderID[n.Spec.ProviderID] = n
		all = append(all, o.observed[n.Name])
	}
	var groupObs []clusterstate.GroupObservation
	for _, g := range o.groups {
		if g.problem != "" {
			continue
		}
		nodes := map[string]clusterstate.NodeObservation{}
		for _, in := range g.instances {
			if n, ok := byProviderID[in.Id]; ok {
				nodes[in.Id] = o.observed[n.Name]
			}
		}
		groupObs = append(groupObs, clusterstate.GroupObservation{ID: g.group.Id(), Target: g.target, Instances: g.instances, Nodes: nodes,
			MaxNodeProvisionTime: l.groupOptions(o, g.group.Id()).MaxNodeProvisionTime})
	}
	for _, c := range l.state.Update(o.now, groupObs) {
		l.cancel(ctx, o, c)
	}
	return l.state.UpdateHealth(o.now, all)
}

// ready reports whether the node can run pods now.
func (o *observation) ready(name string) bool { return o.observed[name].Ready }

func (l *NodeLoop) timed(function string, f func() error) error {
	start := l.clock.Now()
	err := f()
	l.cfg.Metrics.observe(function, l.clock.Since(start))
	return err
}
