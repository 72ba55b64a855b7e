package app

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	autoscalinginformers "k8s.io/client-go/informers/autoscaling/v2"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/config"
	"github.com/tidal-autoscaler/tidal/core/scalein"
	"github.com/tidal-autoscaler/tidal/hpa"
	"github.com/tidal-autoscaler/tidal/hpa/controller"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
)

const (
	// crdPollInterval is how often the pod loop looks for the PodAutoscaler
	// CRD while it is not installed, crdRetryInterval how soon it asks
	// again when discovery failed.
	crdPollInterval  = 10 * time.Second
	crdRetryInterval = time.Second
	// customMetricsRediscovery is how often the custom metrics API's
	// version is looked up again, as kube-controller-manager does.
	customMetricsRediscovery = 5 * time.Minute
)

// podLoopMetrics are the pod loop's Prometheus metrics.
type podLoopMetrics struct {
	observer *controller.Observer
}

func newPodLoopMetrics(reg prometheus.Registerer) *podLoopMetrics {
	return &podLoopMetrics{observer: controller.NewObserver(reg)}
}

// newPodLoop builds the pod loop for one leadership term, registering its
// informers on env.factory before it starts. A nil runner means the pod loop
// is disabled (--hpa=false).
func newPodLoop(env *term) (func(context.Context), error) {
	o := env.opts.HPA
	if !o.Enabled {
		return nil, nil
	}
	pods, err := controller.NewIndexedPods(env.factory.Core().V1().Pods().Informer())
	if err != nil {
		return nil, err
	}
	// HorizontalPodAutoscalers are watched in either mode: driven with
	// --hpa-objects, else to keep off targets an HPA drives (AmbiguousOwner).
	hpas := env.factory.Autoscaling().V2().HorizontalPodAutoscalers()
	hpas.Informer()
	// Until its controller runs, the pod loop shows life itself (while it
	// waits for the CRD); a pod loop that stopped shows none, and /healthz
	// fails after --max-inactivity, so that the pod is restarted.
	alive := &activity{}
	alive.mark(time.Now())
	env.health.track(podLoopName, alive.last)
	return func(ctx context.Context) {
		defer env.health.untrack(podLoopName)
		err := runPodLoop(ctx, env, pods, hpas, alive)
		if err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Pod loop stopped; the node loop carries on, and /healthz fails after --max-inactivity")
			<-ctx.Done()
		}
	}, nil
}

// activity is a loop's last sign of life.
type activity struct{ unixNano atomic.Int64 }

func (a *activity) mark(t time.Time) { a.unixNano.Store(t.UnixNano()) }
func (a *activity) last() time.Time  { return time.Unix(0, a.unixNano.Load()) }

// runPodLoop builds the clients, the metric source and the store, then runs
// the controller until ctx ends. The shared informers have synced.
func runPodLoop(ctx context.Context, env *term, pods controller.PodLister, hpas autoscalinginformers.HorizontalPodAutoscalerInformer, alive *activity) error {
	o := env.opts.HPA
	logger := klog.FromContext(ctx).WithName("podloop")
	ctx = klog.NewContext(ctx, logger)

	disc := env.client.Discovery()
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	scales, err := scale.NewForConfig(env.restConfig, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(disc))
	if err != nil {
		return fmt.Errorf("scale client: %w", err)
	}
	// Goroutines of this term end with it, before runPodLoop returns.
	ctx, stop := context.WithCancel(ctx)
	var running sync.WaitGroup
	defer func() { stop(); running.Wait() }()
	source, err := podLoopMetricSource(ctx, env.loopEnv, &running, mapper, disc)
	if err != nil {
		return err
	}

	var store controller.Store
	var others controller.OtherAutoscalers
	if o.HPAObjects {
		store = controller.NewHPAStore(hpas.Informer(), controller.HPAClientFor(env.client))
		logger.Info("Driving autoscaling/v2 HorizontalPodAutoscalers (--hpa-objects)")
	} else {
		if store, err = podAutoscalerStore(ctx, env.loopEnv, disc, alive); err != nil || store == nil {
			return err
		}
		others = controller.HPAOwners(hpas.Lister())
	}
	var scaleIn func() ([]scalein.Node, time.Time)
	if o.ScaleInDeletionCost {
		scaleIn = env.nodeLoop.ScaleInNodes
	}
	c, err := controller.New(controller.Config{
		Store:      store,
		Pods:       pods,
		Scales:     &controller.Scales{Mapper: mapper, Client: scales},
		Metrics:    source,
		Recorder:   env.recorder,
		Clock:      clock.RealClock{},
		HPA:        hpaConfig(o),
		Workers:    o.Workers,
		SyncPeriod: o.SyncPeriod,
		Observer:   env.podMetrics.observer,
		OnRescale:  env.rescaled,
		Capacity:   env.nodeLoop.CapacityFor,
		ScaleIn:    scaleIn,
		PodClient:  env.client.CoreV1(),

		OtherAutoscalers: others,
		DryRun:           env.opts.DryRun,
	})
	if err != nil {
		return err
	}
	env.nodeLoop.OnCapacityChange(c.EnqueueNamespaces)
	if sim, ok := source.(*metrics.Simulated); ok {
		// A simulated load that changes is synced at once, as a metrics
		// pipeline pushing its samples would allow.
		defer sim.OnChange(c.EnqueueAll)()
	}
	if others != nil {
		// A PodAutoscaler learns at once that an HPA came or went on its
		// target, not at its next periodic sync.
		if _, err := hpas.Informer().AddEventHandler(hpaTargetEvents(c.EnqueueNamespaces)); err != nil {
			return fmt.Errorf("pod loop: watch HorizontalPodAutoscalers: %w", err)
		}
	}
	if !o.HPAObjects {
		running.Go(func() { store.Informer().Run(ctx.Done()) })
		if !cache.WaitForCacheSync(ctx.Done(), store.Informer().HasSynced) {
			return nil
		}
	}
	env.health.track(podLoopName, c.LastActivity)
	c.Run(ctx)
	return nil
}

// hpaConfig maps the flags onto the algorithm's settings.
func hpaConfig(o config.HPAOptions) hpa.Config {
	return hpa.Config{
		Tolerance:                    o.Tolerance,
		CPUInitializationPeriod:      o.CPUInitializationPeriod,
		InitialReadinessDelay:        o.InitialReadinessDelay,
		DownscaleStabilizationWindow: o.DownscaleStabilizationWindow,
	}
}

// podLoopMetricSource builds the metric source the flags ask for, with the
// Prometheus source in front when --prometheus-url is set.
func podLoopMetricSource(ctx context.Context, env *loopEnv, running *sync.WaitGroup, mapper *restmapper.DeferredDiscoveryRESTMapper, disc discovery.DiscoveryInterface) (metrics.Source, error) {
	o := env.opts.HPA
	var base metrics.Source
	switch o.MetricsSource {
	case config.MetricsSourceSimulated:
		sim := env.seams.simulated
		if sim == nil {
			sim = metrics.NewSimulated()
			klog.FromContext(ctx).Info("Simulated metrics without a load: every metric stays invalid until one is set")
		}
		base = sim
	default:
		apis, err := metrics.NewAPIs(env.restConfig, mapper, disc)
		if err != nil {
			return nil, err
		}
		running.Go(func() { wait.Until(apis.Invalidate, customMetricsRediscovery, ctx.Done()) })
		base = apis.APIs
	}
	if o.PrometheusURL == "" {
		return base, nil
	}
	prom, err := metrics.NewPrometheus(o.PrometheusURL, nil)
	if err != nil {
		return nil, fmt.Errorf("--prometheus-url=%q: %w", o.PrometheusURL, err)
	}
	return metrics.Router{Default: base, Prometheus: prom}, nil
}

// podAutoscalerStore waits until the PodAutoscaler CRD is served, then
// returns a store over a new PodAutoscaler informer (not started). It
// returns nil when ctx ends first.
func podAutoscalerStore(ctx context.Context, env *loopEnv, disc discovery.DiscoveryInterface, alive *activity) (controller.Store, error) {
	// Each look is a sign of life for /healthz: look at least twice within
	// --max-inactivity.
	if !waitForPodAutoscalers(ctx, disc, min(crdPollInterval, env.opts.MaxInactivity/2), alive) {
		return nil, nil
	}
	client, err := v1alpha1.NewForConfig(env.restConfig)
	if err != nil {
		return nil, err
	}
	return controller.NewPodAutoscalerStore(controller.NewPodAutoscalerInformer(client, 0), controller.PodAutoscalerClientFor(client)), nil
}

// waitForPodAutoscalers asks discovery whether PodAutoscalers are served
// until they are (true) or ctx ends (false): every crdPollInterval while
// the CRD is not installed, sooner when discovery failed, since a failure
// says nothing of the CRD.
func waitForPodAutoscalers(ctx context.Context, disc discovery.DiscoveryInterface, interval time.Duration, alive *activity) bool {
	logger := klog.FromContext(ctx).WithValues("crd", v1alpha1.Resource+"."+v1alpha1.GroupName)
	logged := false
	for {
		alive.mark(time.Now())
		served, err := controller.PodAutoscalersServed(disc)
		next := interval
		switch {
		case served:
			if logged {
				logger.Info("PodAutoscaler CRD found")
			}
			return true
		case err != nil:
			logger.Error(err, "Could not tell whether the PodAutoscaler CRD is served; asking again")
			next = min(crdRetryInterval, interval)
		case !logged:
			logger.Info("PodAutoscaler CRD is not installed: the pod loop waits for it (kubectl apply -f deploy/crd/), the node loop runs meanwhile")
			logged = true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(next):
		}
	}
}

// hpaTargetEvents calls enqueue with the namespace of every
// HorizontalPodAutoscaler added or deleted, or whose scale target changed
// (not on its status writes, which the HPA controller makes every sync).
func hpaTargetEvents(enqueue func(namespaces []string)) cache.ResourceEventHandler {
	ns := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if h, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler); ok {
			enqueue([]string{h.Namespace})
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: ns,
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*autoscalingv2.HorizontalPodAutoscaler)
			c, ok2 := cur.(*autoscalingv2.HorizontalPodAutoscaler)
			if ok1 && ok2 && o.Spec.ScaleTargetRef != c.Spec.ScaleTargetRef {
				ns(cur)
			}
		},
		DeleteFunc: ns,
	}
}

// rescaled tells the node loop of a rescale the pod loop made, for
// provision-ahead.
func (env *term) rescaled(ctx context.Context, r controller.Rescale) {
	env.nodeLoop.Rescaled(ctx, r.Namespace, r.Target, r.From, r.To, r.Autoscaler)
}
