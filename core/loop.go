// Package core is the node loop: every scan interval it looks at pending
// pods and node groups, decides, and asks the cloud provider to act.
//
// Decisions are pure functions over plain data (PlanScaleUp); this package
// gathers that data from informers and the cloud, and carries decisions out.
package core

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/expander"
)

// Config is what the node loop needs to run.
type Config struct {
	Cloud        cloudprovider.CloudProvider
	Pods         corelisters.PodLister
	Nodes        corelisters.NodeLister
	Recorder     record.EventRecorder
	Metrics      *Metrics
	Strategy     expander.Strategy
	Clock        clock.Clock
	ScanInterval time.Duration
	// RunTimeout bounds one iteration. An iteration that started is not
	// cancelled by shutdown: it finishes (or times out) so that no request
	// is left half-made.
	RunTimeout time.Duration
}

// NodeLoop is the cluster autoscaling loop.
type NodeLoop struct {
	cfg          Config
	lastActivity atomic.Int64
}

// NewNodeLoop makes a node loop; Run starts it.
func NewNodeLoop(cfg Config) *NodeLoop {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.RunTimeout == 0 {
		cfg.RunTimeout = 5 * time.Minute
	}
	l := &NodeLoop{cfg: cfg}
	l.lastActivity.Store(cfg.Clock.Now().UnixNano())
	return l
}

// LastActivity is when the loop last completed an iteration (or started).
func (l *NodeLoop) LastActivity() time.Time { return time.Unix(0, l.lastActivity.Load()) }

// Run runs an iteration every scan interval until ctx ends. It returns
// after the iteration in progress, if any, has finished.
func (l *NodeLoop) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	logger.Info("Node loop started", "scanInterval", l.cfg.ScanInterval)
	defer logger.Info("Node loop stopped")
	for {
		l.runIteration(ctx)
		select {
		case <-ctx.Done():
			return
		case <-l.cfg.Clock.After(l.cfg.ScanInterval):
		}
	}
}

func (l *NodeLoop) runIteration(ctx context.Context) {
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.RunTimeout)
	defer cancel()
	if err := l.RunOnce(runCtx); err != nil {
		klog.FromContext(ctx).Error(err, "Node loop iteration failed")
	}
}

// RunOnce is one iteration: refresh the cloud, look at pending pods, grow a
// group if that helps them.
func (l *NodeLoop) RunOnce(ctx context.Context) error {
	start := l.cfg.Clock.Now()
	defer func() {
		l.cfg.Metrics.LoopDuration.WithLabelValues("main").Observe(l.cfg.Clock.Since(start).Seconds())
		l.lastActivity.Store(l.cfg.Clock.Now().UnixNano())
		l.cfg.Metrics.LastActivity.WithLabelValues("main").Set(float64(l.cfg.Clock.Now().Unix()))
	}()
	if err := l.cfg.Cloud.Refresh(); err != nil {
		l.cfg.Metrics.Errors.WithLabelValues("cloudProviderError").Inc()
		return fmt.Errorf("refresh cloud provider: %w", err)
	}
	state, err := l.observe()
	if err != nil {
		l.cfg.Metrics.Errors.WithLabelValues("apiCallError").Inc()
		return err
	}
	l.cfg.Metrics.UnschedulablePods.Set(float64(len(state.pending)))
	if len(state.pending) == 0 {
		return nil
	}
	plan := PlanScaleUp(state.pending, state.readyNodes, state.groups, l.cfg.Strategy)
	if plan.Option == nil {
		klog.FromContext(ctx).V(2).Info("No scale-up", "pending", len(state.pending), "reason", plan.Reason)
		return nil
	}
	return l.scaleUp(ctx, state, *plan.Option)
}

// scaleUp asks the cloud for the option's nodes and tells the pods.
func (l *NodeLoop) scaleUp(ctx context.Context, state *clusterState, opt expander.Option) error {
	group := state.groupByID[opt.NodeGroup]
	g := state.group(opt.NodeGroup)
	logger := klog.FromContext(ctx)
	logger.Info("Scaling up", "nodeGroup", opt.NodeGroup, "from", g.Target, "to", g.Target+opt.NodeCount, "pods", len(opt.Pods))
	if err := group.IncreaseSize(opt.NodeCount); err != nil {
		l.cfg.Metrics.FailedScaleUps.WithLabelValues(opt.NodeGroup, "cloudProviderError").Inc()
		for _, p := range opt.Pods {
			l.cfg.Recorder.Eventf(p, corev1.EventTypeWarning, "FailedScaleUp", "scale-up of node group %s failed: %v", opt.NodeGroup, err)
		}
		return fmt.Errorf("increase node group %s by %d: %w", opt.NodeGroup, opt.NodeCount, err)
	}
	l.cfg.Metrics.ScaledUpNodes.WithLabelValues(opt.NodeGroup).Add(float64(opt.NodeCount))
	l.cfg.Metrics.LastActivity.WithLabelValues("scaleUp").Set(float64(l.cfg.Clock.Now().Unix()))
	msg := fmt.Sprintf("pod triggered scale-up: [{%s %d->%d (max: %d)}]", opt.NodeGroup, g.Target, g.Target+opt.NodeCount, g.Max)
	for _, p := range opt.Pods {
		l.cfg.Recorder.Event(p, corev1.EventTypeNormal, "TriggeredScaleUp", msg)
	}
	return nil
}

// clusterState is one iteration's view of the cluster and the cloud.
type clusterState struct {
	pending    []*corev1.Pod
	readyNodes []NodeState
	groups     []GroupState
	groupByID  map[string]cloudprovider.NodeGroup
}

func (s *clusterState) group(id string) GroupState {
	for _, g := range s.groups {
		if g.ID == id {
			return g
		}
	}
	return GroupState{}
}

func (l *NodeLoop) observe() (*clusterState, error) {
	pods, err := l.cfg.Pods.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	nodes, err := l.cfg.Nodes.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	s := &clusterState{groupByID: map[string]cloudprovider.NodeGroup{}}
	byNode := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if IsUnschedulable(p) {
			s.pending = append(s.pending, p)
		} else if p.Spec.NodeName != "" {
			byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
		}
	}
	readyIDs := map[string]bool{}
	for _, n := range nodes {
		if IsNodeReady(n) && !n.Spec.Unschedulable {
			s.readyNodes = append(s.readyNodes, NodeState{Node: n, Pods: byNode[n.Name]})
			readyIDs[n.Spec.ProviderID] = true
		}
	}
	for _, g := range l.cfg.Cloud.NodeGroups() {
		gs, err := groupState(g, readyIDs)
		if err != nil {
			return nil, err
		}
		s.groups = append(s.groups, gs)
		s.groupByID[g.Id()] = g
		l.cfg.Metrics.NodeGroupTargetSize.WithLabelValues(g.Id()).Set(float64(gs.Target))
	}
	return s, nil
}

func groupState(g cloudprovider.NodeGroup, readyIDs map[string]bool) (GroupState, error) {
	target, err := g.TargetSize()
	if err != nil {
		return GroupState{}, fmt.Errorf("node group %s: target size: %w", g.Id(), err)
	}
	tmpl, err := g.TemplateNodeInfo()
	if err != nil {
		return GroupState{}, fmt.Errorf("node group %s: template node: %w", g.Id(), err)
	}
	instances, err := g.Nodes()
	if err != nil {
		return GroupState{}, fmt.Errorf("node group %s: instances: %w", g.Id(), err)
	}
	upcoming := 0
	for _, in := range instances {
		if readyIDs[in.Id] || in.Status == nil || in.Status.ErrorInfo != nil || in.Status.State == cloudprovider.InstanceDeleting {
			continue
		}
		upcoming++
	}
	return GroupState{ID: g.Id(), Template: tmpl.Node, Target: target, Max: g.MaxSize(), Upcoming: upcoming}, nil
}
