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
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/core/clusterstate"
	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/expander"
	"github.com/tidal-autoscaler/tidal/simulator"
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

	pods         corelisters.PodLister
	nodes        corelisters.NodeLister
	daemonSets   appslisters.DaemonSetLister
	replicaSets  appslisters.ReplicaSetLister
	statefulSets appslisters.StatefulSetLister
	rcs          corelisters.ReplicationControllerLister
	jobs         batchlisters.JobLister
	pdbs         policylisters.PodDisruptionBudgetLister
	deployments  appslisters.DeploymentLister
	configMaps   *configMapSource

	live    *liveSnapshot
	checker *simulator.Checker
	keys    *simulator.EquivalenceKeys
	state   *clusterstate.Tracker
	events  *eventDeduper
	status  *statusWriter
	prio    *priorityConfig

	ahead         *expectations
	sdPlanner     scaledown.Planner
	actuator      *actuator
	unneededSince map[string]time.Time
	// scaleDownDue is when an unneeded node will be due for removal (zero:
	// none); the loop wakes then instead of at its next scan.
	scaleDownDue time.Time
	lastScaleUp  time.Time

	// lifetime is Run's context: removals in the background end with it.
	lifetime     context.Context
	trigger      chan struct{}
	urgent       chan struct{}
	capacity     atomic.Pointer[capacityView]
	onCapacity   atomic.Pointer[func([]string)]
	lastActivity atomic.Int64
	fairness     int
	rnd          *rand.Rand
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
		trigger: make(chan struct{}, 1), urgent: make(chan struct{}, 1), ahead: newExpectations(),
		rnd: rand.New(rand.NewPCG(uint64(cfg.Clock.Now().UnixNano()), 0x7469646c)),
	}
	l.lastActivity.Store(cfg.Clock.Now().UnixNano())
	pods := cfg.Factory.Core().V1().Pods()
	nodes := cfg.Factory.Core().V1().Nodes()
	l.pods, l.nodes = pods.Lister(), nodes.Lister()
	l.daemonSets = cfg.Factory.Apps().V1().DaemonSets().Lister()
	l.replicaSets = cfg.Factory.Apps().V1().ReplicaSets().Lister()
	l.statefulSets = cfg.Factory.Apps().V1().StatefulSets().Lister()
	l.rcs = cfg.Factory.Core().V1().ReplicationControllers().Lister()
	l.jobs = cfg.Factory.Batch().V1().Jobs().Lister()
	l.pdbs = cfg.Factory.Policy().V1().PodDisruptionBudgets().Lister()
	l.deployments = cfg.Factory.Apps().V1().Deployments().Lister()
	l.lifetime = ctx
	if _, err := pods.Informer().AddEventHandler(l.live.podHandler()); err != nil {
		return nil, fmt.Errorf("pod informer: %w", err)
	}
	if _, err := pods.Informer().AddEventHandler(l.unschedulableHandler()); err != nil {
		return nil, fmt.Errorf("pod informer: %w", err)
	}
	if _, err := nodes.Informer().AddEventHandler(l.live.nodeHandler()); err != nil {
		return nil, fmt.Errorf("node informer: %w", err)
	}
	l.configMaps = newConfigMapSource(cfg.Client, cfg.Options.Namespace)
	l.prio = newPriorityConfig(l.configMaps, l.events)
	l.status = newStatusWriter(cfg.Client, cfg.Options, cfg.Clock)
	l.actuator = newActuator(cfg.Client, l.events, l.status, cfg.Clock, cfg.Options.ScaleDown, cfg.Metrics)
	if l.checker, err = simulator.NewChecker(ctx, l.live.snap, cfg.Factory, cfg.Client); err != nil {
		return nil, err
	}
	return l, nil
}

// LastActivity is when the loop last finished an iteration (or started).
func (l *NodeLoop) LastActivity() time.Time { return time.Unix(0, l.lastActivity.Load()) }

// Trigger asks for an iteration as soon as possible.
func (l *NodeLoop) Trigger() {
	select {
	case l.trigger <- struct{}{}:
	default:
	}
}

// unschedulableHandler triggers an iteration when a pod becomes
// unschedulable.
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
			if ok1 && ok2 && IsUnschedulable(n) && !IsUnschedulable(o) {
				l.Trigger()
			}
		},
	}
}

// Run runs iterations every scan interval, and soon after a pod becomes
// unschedulable, until ctx ends. It returns after the iteration in
// progress, if any, has finished.
func (l *NodeLoop) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	if err := l.configMaps.start(ctx); err != nil {
		logger.Error(err, "ConfigMap informer did not start; the priority expander falls back to the next strategy")
	}
	l.lifetime = ctx
	l.cleanUpTaints(ctx)
	logger.Info("Node loop started", "scanInterval", l.opts.ScanInterval, "expander", l.chain.Names())
	defer logger.Info("Node loop stopped")
	// Removals under way stop with ctx and take their taints off.
	defer l.actuator.wait()
	timer := l.clock.NewTimer(0)
	defer timer.Stop()
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

func (l *NodeLoop) runIteration(ctx context.Context) {
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.opts.RunTimeout)
	defer cancel()
	if err := l.RunOnce(runCtx); err != nil {
		klog.FromContext(ctx).Error(err, "Node loop iteration failed")
	}
}

// RunOnce is one iteration.
func (l *NodeLoop) RunOnce(ctx context.Context) error {
	start := l.clock.Now()
	defer func() {
		l.cfg.Metrics.observe("main", l.clock.Since(start))
		l.lastActivity.Store(l.clock.Now().UnixNano())
		l.cfg.Metrics.LastActivity.WithLabelValues("main").Set(float64(l.clock.Now().Unix()))
	}()
	obs, err := l.observe(ctx)
	if err != nil {
		l.cfg.Metrics.Errors.WithLabelValues(errorType(err)).Inc()
		return err
	}
	health := l.updateClusterState(ctx, obs)
	report := &iterationReport{observation: obs, health: health}
	defer func() { l.publish(ctx, report) }()
	if !health.Healthy {
		klog.FromContext(ctx).Info("Cluster is unhealthy, not scaling", "reason", health.Reason)
		return nil
	}
	if err := l.scaleUp(ctx, obs, report); err != nil {
		return err
	}
	return l.scaleDown(ctx, obs, report)
}

func (l *NodeLoop) rand() *rand.Rand { return l.rnd }
