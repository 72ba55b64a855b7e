package localcluster

import (
	"context"
	"slices"
	"strings"

	"fmt"
	corev1 "k8s.io/api/core/v1"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/controller-manager/pkg/informerfactory"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/daemon"
	"k8s.io/kubernetes/pkg/controller/deployment"
	"k8s.io/kubernetes/pkg/controller/disruption"
	"k8s.io/kubernetes/pkg/controller/garbagecollector"
	"k8s.io/kubernetes/pkg/controller/namespace"
	"k8s.io/kubernetes/pkg/controller/nodelifecycle"
	"k8s.io/kubernetes/pkg/controller/podgc"
	"k8s.io/kubernetes/pkg/controller/replicaset"
	"k8s.io/kubernetes/pkg/controller/serviceaccount"
	"k8s.io/kubernetes/pkg/controller/statefulset"
)

// controllerTimings are the node lifecycle controller's periods.
type controllerTimings struct {
	nodeMonitorPeriod      time.Duration
	nodeStartupGracePeriod time.Duration
	nodeMonitorGracePeriod time.Duration
}

// startControllers runs the controllers of kube-controller-manager that an
// autoscaler depends on: Deployment, ReplicaSet, StatefulSet, DaemonSet,
// disruption (PDB status), node lifecycle, namespace, pod GC and the garbage
// collector; with serviceAccounts, also the ServiceAccount controller.
func startControllers(ctx context.Context, cfg *rest.Config, timings controllerTimings, serviceAccounts bool, disabled []string) error {
	skip, err := disabledControllers(disabled)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(withUserAgent(cfg, "kube-controller-manager"))
	if err != nil {
		return fmt.Errorf("controller client: %w", err)
	}
	f := informers.NewSharedInformerFactory(cs, 0)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))
	mapper.Reset()
	go wait.Until(mapper.Reset, 5*time.Second, ctx.Done())

	var runners []func()
	add := func(name string, r func()) {
		if !skip[name] {
			runners = append(runners, r)
		}
	}

	dc, err := deployment.NewDeploymentController(ctx, f.Apps().V1().Deployments(), f.Apps().V1().ReplicaSets(), f.Core().V1().Pods(), cs)
	if err != nil {
		return fmt.Errorf("deployment controller: %w", err)
	}
	add("deployment", func() { dc.Run(ctx, 2) })

	rsc := replicaset.NewReplicaSetController(ctx, f.Apps().V1().ReplicaSets(), f.Core().V1().Pods(), cs, replicaset.BurstReplicas)
	add("replicaset", func() { rsc.Run(ctx, 2) })

	ssc := statefulset.NewStatefulSetController(ctx, f.Core().V1().Pods(), f.Apps().V1().StatefulSets(),
		f.Core().V1().PersistentVolumeClaims(), f.Apps().V1().ControllerRevisions(), cs)
	add("statefulset", func() { ssc.Run(ctx, 1) })

	dsc, err := daemon.NewDaemonSetsController(ctx, f.Apps().V1().DaemonSets(), f.Apps().V1().ControllerRevisions(),
		f.Core().V1().Pods(), f.Core().V1().Nodes(), cs, flowcontrol.NewBackOff(time.Second, time.Minute))
	if err != nil {
		return fmt.Errorf("daemonset controller: %w", err)
	}
	add("daemonset", func() { dsc.Run(ctx, 2) })

	scaleClient, err := scale.NewForConfig(cfg, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(cs.Discovery()))
	if err != nil {
		return fmt.Errorf("scale client: %w", err)
	}
	disr := disruption.NewDisruptionController(ctx, f.Core().V1().Pods(), f.Policy().V1().PodDisruptionBudgets(),
		f.Core().V1().ReplicationControllers(), f.Apps().V1().ReplicaSets(), f.Apps().V1().Deployments(),
		f.Apps().V1().StatefulSets(), cs, mapper, scaleClient, cs.Discovery())
	add("disruption", func() { disr.Run(ctx) })

	nlc, err := nodelifecycle.NewNodeLifecycleController(ctx, f.Coordination().V1().Leases(), f.Core().V1().Pods(),
		f.Core().V1().Nodes(), f.Apps().V1().DaemonSets(), cs, timings.nodeMonitorPeriod,
		timings.nodeStartupGracePeriod, timings.nodeMonitorGracePeriod, 0.1, 0.01, 50, 0.55)
	if err != nil {
		return fmt.Errorf("node lifecycle controller: %w", err)
	}
	add("nodelifecycle", func() { nlc.Run(ctx) })

	pgc := podgc.NewPodGC(ctx, cs, f.Core().V1().Pods(), f.Core().V1().Nodes(), 100)
	add("podgc", func() { pgc.Run(ctx) })

	nsc, err := namespaceController(ctx, cfg, cs, f)
	if err != nil {
		return err
	}
	add("namespace", func() { nsc.Run(ctx, 2) })

	gcRun, err := garbageCollector(ctx, cfg, cs, f, mapper)
	if err != nil {
		return err
	}
	add("garbagecollector", gcRun)

	if serviceAccounts {
		sac, err := serviceaccount.NewServiceAccountsController(klog.FromContext(ctx), f.Core().V1().ServiceAccounts(),
			f.Core().V1().Namespaces(), cs, serviceaccount.DefaultServiceAccountsControllerOptions())
		if err != nil {
			return fmt.Errorf("serviceaccount controller: %w", err)
		}
		add("serviceaccount", func() { sac.Run(ctx, 1) })
	}

	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	for _, r := range runners {
		go r()
	}
	return nil
}

// controllerNames are the controllers startControllers runs, by
// kube-controller-manager's names.
var controllerNames = []string{"deployment", "replicaset", "statefulset", "daemonset", "disruption",
	"nodelifecycle", "podgc", "namespace", "garbagecollector", "serviceaccount"}

// disabledControllers checks names against controllerNames.
func disabledControllers(names []string) (map[string]bool, error) {
	skip := map[string]bool{}
	for _, n := range names {
		if !slices.Contains(controllerNames, n) {
			return nil, fmt.Errorf("unknown controller %q to disable (known: %s)", n, strings.Join(controllerNames, ", "))
		}
		skip[n] = true
	}
	return skip, nil
}

func namespaceController(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, f informers.SharedInformerFactory) (*namespace.NamespaceController, error) {
	mc, err := metadata.NewForConfig(withUserAgent(cfg, "namespace-controller"))
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	return namespace.NewNamespaceController(ctx, cs, mc, cs.Discovery().ServerPreferredNamespacedResources,
		f.Core().V1().Namespaces(), 5*time.Minute, corev1.FinalizerKubernetes), nil
}

func garbageCollector(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, f informers.SharedInformerFactory,
	mapper *restmapper.DeferredDiscoveryRESTMapper) (func(), error) {
	mc, err := metadata.NewForConfig(withUserAgent(cfg, "garbage-collector"))
	if err != nil {
		return nil, fmt.Errorf("metadata client: %w", err)
	}
	mif := metadatainformer.NewSharedInformerFactory(mc, 0)
	started := make(chan struct{})
	close(started)
	gc, err := garbagecollector.NewGarbageCollector(ctx, cs, mc, mapper, garbagecollector.DefaultIgnoredResources(),
		informerfactory.NewInformerFactory(f, mif), started)
	if err != nil {
		return nil, fmt.Errorf("garbage collector: %w", err)
	}
	return func() {
		mif.Start(ctx.Done())
		go gc.Sync(ctx, cs.Discovery(), 5*time.Second)
		gc.Run(ctx, 2, 5*time.Second)
	}, nil
}
