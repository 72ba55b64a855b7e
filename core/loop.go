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
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
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

// NodeLoop is the cluster autoscaling loop: it times iterations (each
// scan, soon after a pod becomes unschedulable, when a node is due) and
// wires the decider, which observes, decides and acts, to the publisher
// and the pod loop. It decides nothing itself.
type NodeLoop struct {
	opts    Options
	clock   clock.WithTicker
	metrics *Metrics

	// d is one iteration without its timing.
	d *Decider
	// handlers are the loop's own informer event handlers (the decider's
	// feed its snapshot).
	handlers  []cache.ResourceEventHandlerRegistration
	rival     *rivalWatch
	publisher *publisher

	trigger chan struct{}
	urgent  chan struct{}
	// restores are the nominations the scheduler cleared, to be set again
	// at once (Decider.restoreNomination).
	restores     restores
	lastActivity atomic.Int64
	// lastSuccess is when an iteration last ended without an error.
	lastSuccess atomic.Int64
	// last is what the last iteration concluded (LastDecisions).
	last atomic.Pointer[Decisions]
}

// NewNodeLoop builds the loop and registers its informers on cfg.Factory,
// which the caller starts.
func NewNodeLoop(ctx context.Context, cfg Config) (*NodeLoop, error) {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	d, err := NewDecider(ctx, cfg)
	if err != nil {
		return nil, err
	}
	l := &NodeLoop{opts: d.opts, clock: cfg.Clock, metrics: cfg.Metrics, d: d,
		trigger: make(chan struct{}, 1), urgent: make(chan struct{}, 1), restores: make(restores, restoreQueue)}
	l.lastActivity.Store(cfg.Clock.Now().UnixNano())
	l.lastSuccess.Store(cfg.Clock.Now().UnixNano())
	pods := cfg.Factory.Core().V1().Pods()
	nodes := cfg.Factory.Core().V1().Nodes()
	for _, h := range []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
		what     string
	}{
		{pods.Informer(), l.unschedulableHandler(), "pod"},
		{nodes.Informer(), l.readyHandler(), "node"},
	} {
		reg, err := h.informer.AddEventHandler(h.handler)
		if err != nil {
			return nil, fmt.Errorf("%s informer: %w", h.what, err)
		}
		l.handlers = append(l.handlers, reg)
	}
	if n, ok := cfg.Cloud.(cloudprovider.InstanceErrorNotifier); ok {
		// The loop decides again at once, so the group is backed off and
		// another used within about a second, not at the next scan.
		n.NotifyInstanceErrors(func(group string) {
			d.launchErrors.reported(group)
			l.Trigger()
		})
	}
	l.publisher = &publisher{metrics: cfg.Metrics, status: d.status}
	// A loop that acts on nothing watches no Lease of Cluster
	// Autoscaler's (it runs beside one).
	if !l.opts.DryRun {
		l.rival = newRivalWatch(cfg.Client, l.opts.ClusterAutoscalerLeaseNamespace, l.opts.ClusterAutoscalerLeaseName, l.clock, d.events)
	}
	return l, nil
}

// HasSynced reports whether the loop's event handlers have received every
// object of the informers' first List: before, an iteration would decide
// on part of the cluster. The caller waits for it after the informers
// synced and before Run.
func (l *NodeLoop) HasSynced() bool {
	if !l.d.HasSynced() {
		return false
	}
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
// unschedulable, when the scheduler reports again that a pod waiting
// for new nodes does not fit, after a node became ready (see waiters), and
// when an unschedulable pod loses the nomination tidal gave it, or is bound
// to another node than tidal nominated it to.
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
			if ok1 && ok2 && o.Spec.NodeName == "" && n.Spec.NodeName != "" && l.d.nominatedTo.elsewhere(n.UID, n.Spec.NodeName) {
				// Bound elsewhere than tidal nominated it: the node it was
				// planned on may be left with nothing while it starts.
				l.Trigger()
				return
			}
			if !ok1 || !ok2 || !IsUnschedulable(n) {
				return
			}
			cleared := nominationCleared(o, n) && l.d.nominatedTo.has(o.Status.NominatedNodeName)
			if cleared {
				l.restores.queue(restoreRequest{uid: n.UID, namespace: n.Namespace, name: n.Name, node: o.Status.NominatedNodeName})
			}
			if !IsUnschedulable(o) || scheduledChanged(o, n) && l.d.waiters.unschedulableAgain(n.UID) || cleared {
				l.Trigger()
			}
		},
	}
}

// nominationCleared tells whether the pod's nomination was taken away
// (the scheduler does so when the pod fits no node yet): tidal sets it
// again while its plan stands.
func nominationCleared(old, n *corev1.Pod) bool {
	return old.Status.NominatedNodeName != "" && n.Status.NominatedNodeName == ""
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
// they may fit there now, or the loop sees that they do not. It does too
// when a node registers not yet ready while pods wait: the pods planned
// on it are nominated to it before the scheduler can place anything there.
// And when a node goes that pods are nominated to: they get another node
// from the next decision, not the next scan.
func (l *NodeLoop) readyHandler() cache.ResourceEventHandler {
	ready := func(obj any) bool {
		n, ok := obj.(*corev1.Node)
		return ok && l.opts.Taints.Observe(n).Ready
	}
	becameReady := func() {
		if l.d.waiters.nodeReady() {
			l.Trigger()
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			switch {
			case ready(obj):
				becameReady()
			case l.opts.NominatePlannedPods && l.d.waiters.any():
				l.Trigger()
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			if ready(newObj) && !ready(oldObj) {
				becameReady()
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if n, ok := obj.(*corev1.Node); ok && l.d.nominatedTo.has(n.Name) {
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
	// The ConfigMap informers end with ctx, before Run returns.
	defer l.d.configMaps.wait()
	if err := l.d.configMaps.start(ctx); err != nil {
		logger.Error(err, "ConfigMap informers did not start; the priority expander falls back to the next strategy, no schedules apply")
	}
	l.d.lifetime = ctx
	// The informers' caches may be synced before their handlers have fed
	// the snapshot: a first iteration then would see pods without the
	// nodes they fit on.
	if !cache.WaitForCacheSync(ctx.Done(), l.HasSynced) {
		return
	}
	logger.Info("Node loop started", "scanInterval", l.opts.ScanInterval, "expander", l.d.chain.Names())
	defer logger.Info("Node loop stopped")
	// Removals under way stop with ctx and take their taints off.
	defer l.d.actuator.Wait()
	// Interruptions the cloud tells of wake the loop at once.
	var queue sync.WaitGroup
	defer queue.Wait()
	queue.Go(func() {
		l.d.interrupts.run(ctx, func() {
			select {
			case l.urgent <- struct{}{}:
			default:
			}
		})
	})
	queue.Go(func() {
		l.restores.run(ctx, l.d, func(n *corev1.Node) bool { return !l.opts.Taints.Observe(n).Ready && !beingDeleted(n) })
	})
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
	w := l.d.wake
	if until := w.scaleDownDue.Sub(l.clock.Now()); until > 0 && until+10*time.Millisecond < wait {
		wait = until + 10*time.Millisecond
	}
	if w.recheck > 0 && w.recheck < wait {
		wait = w.recheck
	}
	// A schedule window opens or closes, or an allocation trigger is due.
	if due := l.d.sched.due(); !due.IsZero() && due.Sub(l.clock.Now())+10*time.Millisecond < wait {
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
	nodes, err := l.d.nodes.List(labels.Everything())
	if err != nil {
		klog.FromContext(ctx).Error(err, "Could not list nodes to clean up taints")
		return true
	}
	_ = l.d.actuator.CleanUpTaints(ctx, nodes) // each failure is logged; the taint stays
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
			l.metrics.LoopError(errorType(err))
		}
		l.metrics.Observe("main", l.clock.Since(start))
		l.lastActivity.Store(l.clock.Now().UnixNano())
		l.metrics.Activity("main", l.clock.Now())
	}()
	// A running Cluster Autoscaler acts on the same nodes: stand aside
	// (shadow mode, which acts on nothing, watches no Lease).
	if aside, err := l.rival.standAside(ctx); aside || err != nil {
		return err
	}
	it, err := l.d.Decide(ctx)
	if it != nil {
		l.publisher.publish(ctx, it)
		l.d.events.SendEarlyStatusEvents(l.publisher.status)
		if l.opts.KeepDecisions {
			l.last.Store(DecisionsOf(it))
		}
	}
	return err
}
