// Package controller is tidal's pod loop: it drives PodAutoscalers (or
// autoscaling/v2 HorizontalPodAutoscalers) the way the Kubernetes HPA
// controller drives HorizontalPodAutoscalers.
//
// An informer feeds a rate-limited work queue; each key is synced again
// every sync period. One sync reads the target's /scale, lists the pods its
// selector matches from the shared pod informer, fetches each metric from a
// metrics.Source, and hands everything to hpa.Reconcile, a pure calculation.
// Then it acts at the edges: PUT /scale (retried on conflict), events, and a
// status write when the status changed. The stabilization and scale-event
// history lives in the object (see Store), so a restart or a new leader
// carries on where the previous one stopped.
package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tidal-autoscaler/tidal/core/scalein"
	"github.com/tidal-autoscaler/tidal/hpa"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
)

// Defaults of the controller's settings.
const (
	DefaultWorkers    = 5
	DefaultSyncPeriod = 15 * time.Second
	// syncTimeout bounds one sync's API calls and metric fetches.
	syncTimeout = 30 * time.Second
	// failureBaseDelay is the first retry delay after a failed sync; it
	// doubles up to the sync period.
	failureBaseDelay = time.Second
)

// Config is what a Controller is built from.
type Config struct {
	// Store reads the autoscalers and writes their status.
	Store Store
	// Pods lists the pods a target's selector matches (IndexedPods).
	Pods PodLister
	// Scales reads and writes the targets' /scale.
	Scales ScaleClient
	// Metrics fetches metric values.
	Metrics metrics.Source
	// Recorder receives the events.
	Recorder record.EventRecorder
	// Clock is the time source (clock.RealClock{} when nil).
	Clock clock.PassiveClock
	// HPA holds the algorithm's settings (tolerance, windows, readiness).
	HPA hpa.Config
	// Workers is how many autoscalers are synced at once (DefaultWorkers).
	Workers int
	// SyncPeriod is how often each autoscaler is synced (DefaultSyncPeriod).
	SyncPeriod time.Duration
	// Observer receives the controller's Prometheus metrics; may be nil.
	Observer *Observer
	// OnRescale, when set, is told of every successful rescale, so the
	// node loop can plan nodes for new replicas before their pods exist.
	OnRescale func(ctx context.Context, r Rescale)
	// ScaleIn, when set, is the node loop's scale-in view: its nodes and
	// when they were seen (nil nodes while it has none). Just before a
	// Deployment or ReplicaSet is scaled down (not in dry-run), the pod
	// loop sets pod-deletion-cost on its replicas through PodClient so that
	// those on the nodes scale-down would empty first go. A failed write is
	// logged and counted; the scale-down is written all the same.
	ScaleIn func() ([]scalein.Node, time.Time)
	// PodClient patches the replicas' deletion costs; required with
	// ScaleIn.
	PodClient corev1client.PodsGetter
	// Capacity, when set, tells how many of a target's pods wait for nodes
	// and what the node loop does about it (the WaitingForCapacity
	// condition).
	Capacity func(namespace string, pods []*corev1.Pod) (waiting int32, message string)
	// OtherAutoscalers, when set, lists the autoscalers of another kind on
	// a scale target; a target that has any is not scaled (AmbiguousOwner).
	OtherAutoscalers OtherAutoscalers
	// DryRun is shadow mode: the controller computes as always but writes
	// neither /scale nor the autoscalers' status; each rescale it would
	// have made is an event (the recorder prefixes DryRun), a log line and
	// tidal_dry_run_pod_autoscaler_* metrics.
	DryRun bool
}

// Rescale is a successful change of a scale target's replicas.
type Rescale struct {
	// Autoscaler is the PodAutoscaler or HorizontalPodAutoscaler that
	// decided it.
	Autoscaler *corev1.ObjectReference
	Namespace  string
	Target     autoscalingv2.CrossVersionObjectReference
	From, To   int32
	// Selector is the label selector of the target's pods, from its
	// /scale status.
	Selector string
}

// Controller is the pod loop.
type Controller struct {
	cfg       Config
	clock     clock.PassiveClock
	queue     workqueue.TypedRateLimitingInterface[string]
	selectors *selectorIndex
	handler   cache.ResourceEventHandlerRegistration
	// wanted is, in shadow mode, the count each autoscaler last wanted.
	wanted *dryRunWanted
	// invalid are the autoscalers whose spec tidal cannot use.
	invalid invalidSpecs
	// lastActivity is when a worker last took the heartbeat (unix ns).
	lastActivity atomic.Int64
	// beforeScaleDown, when set, runs just before a scale-down is written
	// (the deletion costs); its error is logged, the write goes on.
	beforeScaleDown func(ctx context.Context, r Rescale) error
}

// New builds a controller and registers its event handlers on the store's
// informer. Start the informers, then call Run.
func New(cfg Config) (*Controller, error) {
	if cfg.Store == nil || cfg.Pods == nil || cfg.Scales == nil || cfg.Metrics == nil || cfg.Recorder == nil {
		return nil, errors.New("pod loop: store, pods, scales, metrics and recorder are required")
	}
	if cfg.ScaleIn != nil && cfg.PodClient == nil {
		return nil, errors.New("pod loop: a pod client is required to write deletion costs")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.SyncPeriod <= 0 {
		cfg.SyncPeriod = DefaultSyncPeriod
	}
	c := &Controller{
		cfg:       cfg,
		clock:     cfg.Clock,
		selectors: newSelectorIndex(),
		wanted:    &dryRunWanted{last: map[string]int32{}},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](failureBaseDelay, cfg.SyncPeriod),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "podautoscaler"}),
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	if cfg.ScaleIn != nil {
		d := &deletionCosts{pods: cfg.Pods, client: cfg.PodClient, nodes: cfg.ScaleIn, observer: cfg.Observer}
		c.beforeScaleDown = d.beforeScaleDown
	}
	if inf := cfg.Store.Informer(); inf != nil {
		reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    c.enqueue,
			UpdateFunc: c.update,
			DeleteFunc: c.remove,
		})
		if err != nil {
			return nil, fmt.Errorf("pod loop: register event handler: %w", err)
		}
		c.handler = reg
	}
	return c, nil
}

// EnqueueAll asks for a sync of every autoscaler at once.
func (c *Controller) EnqueueAll() {
	if inf := c.cfg.Store.Informer(); inf != nil {
		for _, key := range inf.GetStore().ListKeys() {
			c.queue.Add(key)
		}
	}
}

// EnqueueNamespaces asks for a sync of every autoscaler in the given
// namespaces at once (the node loop calls it when their pods start or stop
// waiting for nodes).
func (c *Controller) EnqueueNamespaces(namespaces []string) {
	inf := c.cfg.Store.Informer()
	if inf == nil {
		return
	}
	for _, key := range inf.GetStore().ListKeys() {
		ns, _, err := cache.SplitMetaNamespaceKey(key)
		if err == nil && slices.Contains(namespaces, ns) {
			c.queue.Add(key)
		}
	}
}

// enqueue syncs a new autoscaler at once.
func (c *Controller) enqueue(obj any) {
	if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

// update syncs an autoscaler at once when what drives it changed; status
// writes (tidal's own, mostly) wait for the next periodic sync.
func (c *Controller) update(old, cur any) {
	if c.cfg.Store.SpecChanged(old, cur) {
		c.enqueue(cur)
	}
}

// remove forgets a deleted autoscaler.
func (c *Controller) remove(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	c.selectors.remove(key)
	c.queue.Forget(key)
}

// Run syncs autoscalers with the configured workers until ctx ends, then
// waits for the syncs in progress. The store's informer and the pod
// informer must have synced.
func (c *Controller) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	logger.Info("Pod loop starting", "workers", c.cfg.Workers, "syncPeriod", c.cfg.SyncPeriod)
	c.beat()
	go c.heartbeat(ctx)
	var wg sync.WaitGroup
	for range c.cfg.Workers {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	if c.handler != nil {
		_ = c.cfg.Store.Informer().RemoveEventHandler(c.handler)
	}
	logger.Info("Pod loop stopped")
}

// processNext syncs one key; it reports false when the queue shut down.
func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if key == heartbeatKey {
		c.beat()
		c.queue.Forget(key)
		return true
	}
	syncCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), syncTimeout)
	gone, err := c.Sync(syncCtx, key)
	cancel()
	switch {
	case gone:
		c.queue.Forget(key)
	case err != nil:
		klog.FromContext(ctx).Error(err, "Sync failed; retrying", "podAutoscaler", key)
		c.queue.AddRateLimited(key)
	default:
		c.queue.Forget(key)
		c.queue.AddAfter(key, c.cfg.SyncPeriod)
	}
	return true
}
