// Package core is the node loop: every scan interval, and at once when pods
// become unschedulable, it looks at pending pods and node groups, decides,
// and asks the cloud provider to act.
//
// Decisions are made by pure functions over plain data (scaleup.Decide over
// a simulator snapshot); this package gathers that data from informers and
// the cloud, keeps the cluster state between iterations, and carries
// decisions out: cloud calls, events, the status ConfigMap and metrics.
package core

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/act"
	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/nodeschedule"
	"github.com/tidal-autoscaler/tidal/core/telemetry"
	"github.com/tidal-autoscaler/tidal/expander"
	"github.com/tidal-autoscaler/tidal/simulator"
	"github.com/tidal-autoscaler/tidal/simulator/factorylisters"
)

// Config is what the node loop is built from.
type Config struct {
	Cloud   cloudprovider.CloudProvider
	Client  kubernetes.Interface
	Factory informers.SharedInformerFactory
	// Recorder records events on pods, nodes and tidal's ConfigMaps.
	Recorder record.EventRecorder
	Metrics  *Metrics
	Clock    clock.WithTicker
	Options  Options
}

// NodeLoop is the cluster autoscaling loop.
type NodeLoop struct {
	cfg   Config
	opts  Options
	clock clock.WithTicker
	chain *expander.Chain

	pods       corelisters.PodLister
	nodes      corelisters.NodeLister
	configMaps *configMapSource
	// handlers are the loop's informer event handlers.
	handlers []cache.ResourceEventHandlerRegistration

	live    *liveSnapshot
	checker *simulator.Checker
	keys    *simulator.EquivalenceKeys
	state   *clusterstate.Tracker
	events  *telemetry.Events
	prio    *priorityConfig
	rival   *rivalWatch
	sched   *schedules

	ahead     *expectations
	waiters   *waiters
	actuator  act.Actuator
	observer  *observer
	publisher *publisher
	// scaleIn is the last scale-in view (see ScaleInNodes).
	scaleIn atomic.Pointer[scaleInView]
	// scaleDownDue is when an unneeded node will be due for removal (zero:
	// none); the loop wakes then instead of at its next scan.
	scaleDownDue time.Time
	// recheck, when set, is how soon to decide again for pending pods the
	// last decision placed on ready nodes (see nextRecheck).
	recheck time.Duration

	// lifetime is Run's context: removals in the background end with it.
	lifetime     context.Context
	trigger      chan struct{}
	urgent       chan struct{}
	lastActivity atomic.Int64
	// lastSuccess is when an iteration last ended without an error.
	lastSuccess atomic.Int64
	// errorsReported maps node groups to when the cloud told of their
	// failed launches, for the log.
	errorsReported sync.Map
	// mem is what the decisions carry from one iteration to the next.
	mem memory
	// decisions is what the last iteration concluded (LastDecisions).
	decisions atomic.Pointer[Decisions]
}

// NewNodeLoop builds the loop and registers its informers on cfg.Factory,
// which the caller starts.
func NewNodeLoop(ctx context.Context, cfg Config) (*NodeLoop, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	chain, err := expander.ParseChain(cfg.Options.Expander)
	if err != nil {
		return nil, err
	}
	l := &NodeLoop{
		cfg: cfg, opts: cfg.Options, clock: cfg.Clock, chain: chain,
		live: newLiveSnapshot(), keys: simulator.NewEquivalenceKeys(),
		state:   clusterstate.New(cfg.Options.ClusterState),
		events:  newEventDeduper(cfg.Recorder, cfg.Clock, cfg.Options.RecordDuplicatedEvents),
		trigger: make(chan struct{}, 1), urgent: make(chan struct{}, 1), ahead: newExpectations(), waiters: newWaiters(),
		mem: memory{rnd: rand.New(rand.NewPCG(uint64(cfg.Clock.Now().UnixNano()), 0x7469646c))},
	}
	// GPU nodes are ready once their GPUs are, by the provider's label.
	if cfg.Cloud != nil {
		l.opts.Taints.GPULabel = cfg.Cloud.GPULabel()
	}
	l.lastActivity.Store(cfg.Clock.Now().UnixNano())
	l.lastSuccess.Store(cfg.Clock.Now().UnixNano())
	pods := cfg.Factory.Core().V1().Pods()
	nodes := cfg.Factory.Core().V1().Nodes()
	l.pods, l.nodes = pods.Lister(), nodes.Lister()
	l.lifetime = ctx
	l.observer = &observer{cloud: cfg.Cloud, clock: cfg.Clock, metrics: cfg.Metrics, opts: l.opts, live: l.live,
		ahead: l.ahead, events: l.events, templates: map[string]groupTemplateState{},
		pods: l.pods, daemonSets: cfg.Factory.Apps().V1().DaemonSets().Lister(),
		deployments: cfg.Factory.Apps().V1().Deployments().Lister(), statefulSets: cfg.Factory.Apps().V1().StatefulSets().Lister(),
		replicaSets: cfg.Factory.Apps().V1().ReplicaSets().Lister(), rcs: cfg.Factory.Core().V1().ReplicationControllers().Lister(),
		jobs: cfg.Factory.Batch().V1().Jobs().Lister(), pdbs: cfg.Factory.Policy().V1().PodDisruptionBudgets().Lister()}
	for _, h := range []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
		what     string
	}{
		{pods.Informer(), l.live.podHandler(), "pod"},
		{pods.Informer(), l.unschedulableHandler(), "pod"},
		{nodes.Informer(), l.live.nodeHandler(), "node"},
	} {
		reg, err := h.informer.AddEventHandler(h.handler)
		if err != nil {
			return nil, fmt.Errorf("%s informer: %w", h.what, err)
		}
		l.handlers = append(l.handlers, reg)
	}
	if _, err := nodes.Informer().AddEventHandler(l.readyHandler()); err != nil {
		return nil, fmt.Errorf("node informer: %w", err)
	}
	if n, ok := cfg.Cloud.(cloudprovider.InstanceErrorNotifier); ok {
		n.NotifyInstanceErrors(l.instanceErrors)
	}
	l.configMaps = newConfigMapSource(cfg.Client, cfg.Options.Namespace, expander.PriorityConfigMapName, expander.CAPriorityConfigMapName,
		nodeschedule.ConfigMapName)
	l.sched = &schedules{source: l.configMaps}
	l.prio = newPriorityConfig(l.configMaps, l.events)
	l.publisher = &publisher{opts: l.opts, metrics: cfg.Metrics, status: newStatusWriter(cfg.Client, cfg.Options, cfg.Clock)}
	l.actuator, l.rival = l.newActuator(pods.Informer().HasSynced)
	listers, err := factorylisters.New(cfg.Factory)
	if err != nil {
		return nil, err
	}
	if l.checker, err = simulator.NewChecker(ctx, l.live.snap, listers); err != nil {
		return nil, err
	}
	return l, nil
}

// HasSynced reports whether the loop's event handlers have received every
// object of the informers' first List: before, an iteration would decide
// on part of the cluster. The caller waits for it after the informers
// synced and before Run.
func (l *NodeLoop) HasSynced() bool {
	for _, h := range l.handlers {
		if !h.HasSynced() {
			return false
		}
	}
	return true
}

// LastActivity is when the loop last finished an iteration (or started).
func (l *NodeLoop) LastActivity() time.Time { return time.Unix(0, l.lastActivity.Load()) }

// LastSuccess is when an iteration last ended without an error (or the
// loop started).
func (l *NodeLoop) LastSuccess() time.Time { return time.Unix(0, l.lastSuccess.Load()) }

// Trigger asks for an iteration as soon as possible.
func (l *NodeLoop) Trigger() {
	select {
	case l.trigger <- struct{}{}:
	default:
	}
}

// unschedulableHandler triggers an iteration when a pod becomes
// unschedulable, and when the scheduler reports again that a pod waiting
// for new nodes does not fit, after a node became ready (see waiters).
func (l *NodeLoop) unschedulableHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok && IsUnschedulable(p) {
				l.Trigger()
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Pod)
			n, ok2 := newObj.(*corev1.Pod)
			if !ok1 || !ok2 || !IsUnschedulable(n) {
				return
			}
			if !IsUnschedulable(o) || scheduledChanged(o, n) && l.waiters.unschedulableAgain(n.UID) {
				l.Trigger()
			}
		},
	}
}

// scheduledChanged tells whether the scheduler wrote the pod's PodScheduled
// condition anew: it does so after each attempt whose outcome reads
// otherwise (the count of nodes in its message changes as nodes come).
func scheduledChanged(old, n *corev1.Pod) bool {
	oc, nc := podScheduled(old), podScheduled(n)
	return nc != nil && (oc == nil || oc.Message != nc.Message || oc.Reason != nc.Reason ||
		!oc.LastTransitionTime.Equal(&nc.LastTransitionTime) || !oc.LastProbeTime.Equal(&nc.LastProbeTime))
}

func podScheduled(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// readyHandler triggers an iteration when a node becomes ready (its Ready
// condition True and no startup taint left) while pods wait for new nodes:
// they may fit there now, or the loop sees that they do not.
func (l *NodeLoop) readyHandler() cache.ResourceEventHandler {
	ready := func(obj any) bool {
		n, ok := obj.(*corev1.Node)
		return ok && l.opts.Taints.Observe(n).Ready
	}
	becameReady := func() {
		if l.waiters.nodeReady() {
			l.Trigger()
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if ready(obj) {
				becameReady()
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			if ready(newObj) && !ready(oldObj) {
				becameReady()
			}
		},
	}
}

// instanceErrors is told by the cloud provider that launches of group
// failed: the loop decides again at once, so the group is backed off and
// another used within about a second, not at the next scan.
func (l *NodeLoop) instanceErrors(group string) {
	l.errorsReported.Store(group, l.clock.Now())
	l.Trigger()
}

// Run runs iterations every scan interval, and soon after a pod becomes
// unschedulable, until ctx ends. It returns after the iteration in
// progress, if any, has finished.
func (l *NodeLoop) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	// The ConfigMap informers end with ctx, before Run returns.
	defer l.configMaps.wait()
	if err := l.configMaps.start(ctx); err != nil {
		logger.Error(err, "ConfigMap informers did not start; the priority expander falls back to the next strategy, no schedules apply")
	}
	l.lifetime = ctx
	// The informers' caches may be synced before their handlers have fed
	// the snapshot: a first iteration then would see pods without the
	// nodes they fit on.
	if !cache.WaitForCacheSync(ctx.Done(), l.HasSynced) {
		return
	}
	logger.Info("Node loop started", "scanInterval", l.opts.ScanInterval, "expander", l.chain.Names())
	defer logger.Info("Node loop stopped")
	// Removals under way stop with ctx and take their taints off.
	defer l.actuator.Wait()
	timer := l.clock.NewTimer(0)
	defer timer.Stop()
	taintsLeft := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C():
		case <-l.trigger:
			if !l.debounce(ctx) {
				return
			}
		case <-l.urgent:
			// The pod loop just asked for replicas: decide before their
			// pods exist, without waiting for a burst to settle.
		}
		if taintsLeft {
			taintsLeft = !l.cleanUpTaintsUnlessAside(ctx)
		}
		l.runIteration(ctx)
		timer.Reset(l.nextWait())
	}
}

// nextWait is the scan interval, or less when a node is due for removal
// sooner.
func (l *NodeLoop) nextWait() time.Duration {
	wait := l.opts.ScanInterval
	// A little past the due time, so the node is unneeded long enough. A
	// due time already past (the iteration did not get to scale-down)
	// changes nothing.
	if until := l.scaleDownDue.Sub(l.clock.Now()); until > 0 && until+10*time.Millisecond < wait {
		wait = until + 10*time.Millisecond
	}
	if l.recheck > 0 && l.recheck < wait {
		wait = l.recheck
	}
	// A schedule window opens or closes, or an allocation trigger is due.
	if due := l.sched.due(); !due.IsZero() && due.Sub(l.clock.Now())+10*time.Millisecond < wait {
		until := due.Sub(l.clock.Now())
		wait = max(until, 0) + 10*time.Millisecond
	}
	return wait
}

// debounce waits for a burst of triggers to settle: until none came for
// Debounce, or DebounceMax passed since the first. It reports false when
// ctx ended meanwhile.
func (l *NodeLoop) debounce(ctx context.Context) bool {
	if l.opts.Debounce <= 0 {
		return true
	}
	deadline := l.clock.After(l.opts.DebounceMax)
	quiet := l.clock.NewTimer(l.opts.Debounce)
	defer quiet.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-deadline:
			return true
		case <-quiet.C():
			return true
		case <-l.trigger:
			quiet.Reset(l.opts.Debounce)
		}
	}
}

// cleanUpTaintsUnlessAside takes stale deletion taints off before the
// first iteration that acts, and reports whether it did: while Cluster
// Autoscaler runs, the taints may be its drains'.
func (l *NodeLoop) cleanUpTaintsUnlessAside(ctx context.Context) bool {
	if aside, _ := l.rival.standAside(ctx); aside {
		return false
	}
	nodes, err := l.nodes.List(labels.Everything())
	if err != nil {
		klog.FromContext(ctx).Error(err, "Could not list nodes to clean up taints")
		return true
	}
	_ = l.actuator.CleanUpTaints(ctx, nodes) // each failure is logged; the taint stays
	return true
}

func (l *NodeLoop) runIteration(ctx context.Context) {
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.opts.RunTimeout)
	defer cancel()
	if err := l.RunOnce(runCtx); err != nil {
		klog.FromContext(ctx).Error(err, "Node loop iteration failed")
		return
	}
	l.lastSuccess.Store(l.clock.Now().UnixNano())
}

// RunOnce is one iteration; one that fails counts in the errors metric.
func (l *NodeLoop) RunOnce(ctx context.Context) (err error) {
	start := l.clock.Now()
	defer func() {
		if err != nil {
			l.cfg.Metrics.LoopError(errorType(err))
		}
		l.cfg.Metrics.Observe("main", l.clock.Since(start))
		l.lastActivity.Store(l.clock.Now().UnixNano())
		l.cfg.Metrics.Activity("main", l.clock.Now())
	}()
	// A running Cluster Autoscaler acts on the same nodes: stand aside
	// (shadow mode, which acts on nothing, watches no Lease).
	if aside, err := l.rival.standAside(ctx); aside || err != nil {
		return err
	}
	obs, err := l.observer.observe(ctx)
	if err != nil {
		return err
	}
	// Taints failed removals could not take off come off first, whatever
	// else this iteration does.
	l.actuator.Begin(ctx)
	report := &iterationReport{observation: obs}
	health := l.updateClusterState(ctx, obs, report)
	report.health = health
	l.readSchedules(ctx, obs, report)
	defer func() {
		report.groups = map[string]clusterstate.GroupView{}
		for _, g := range l.state.Groups() {
			report.groups[g.ID] = g
		}
		report.removing = l.actuator.Removing().Nodes
		report.unneededSince = l.mem.unneeded
		l.actuator.End(err == nil, obs.targets())
		l.publisher.publish(ctx, report)
		l.events.SendEarlyStatusEvents(l.publisher.status)
		if l.opts.KeepDecisions {
			l.decisions.Store(decisionsOf(report))
		}
	}()
	if !health.Healthy {
		klog.FromContext(ctx).Info("Cluster is unhealthy, not scaling", "reason", health.Reason)
		return nil
	}
	l.enforceSchedules(ctx, obs, report)
	err = l.scaleUp(ctx, obs, report)
	l.waiters.update(obs.pending, report.plan)
	l.recheck = nextRecheck(report.plan, l.recheck, l.opts.ScanInterval)
	if err != nil {
		return err
	}
	return l.scaleDown(ctx, obs, report)
}
