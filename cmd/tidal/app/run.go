package app

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/aws"
	"github.com/tidal-autoscaler/tidal/cmd/tidal/app/nodeopts"
	"github.com/tidal-autoscaler/tidal/config"
	"github.com/tidal-autoscaler/tidal/core"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
	"github.com/tidal-autoscaler/tidal/version"
)

// ComponentName is the event source and user agent of tidal.
const ComponentName = "tidal"

// The loops' names on /healthz.
const (
	nodeLoopName = "node loop"
	podLoopName  = "pod loop"
)

// Option changes what Run builds; tests use them to inject faults.
type Option func(*seams)

// seams are the parts of Run a test, or tidal-local, may set or wrap.
type seams struct {
	transport func(http.RoundTripper) http.RoundTripper
	cloud     func(cloudprovider.CloudProvider) cloudprovider.CloudProvider
	// localCloudGuard refuses to start the local cloud in a cluster with
	// nodes it did not create.
	localCloudGuard bool
	// simulated is the source of --hpa-metrics-source=simulated
	// (WithSimulatedMetrics); nil starts one without a load.
	simulated *metrics.Simulated
	// localCloudClient is the local cloud's client (WithLocalCloudClient);
	// nil makes one of tidal's configuration.
	localCloudClient kubernetes.Interface
	// unsupported are the features asked for that tidal does not have
	// (WithUnsupportedFeatures).
	unsupported []config.UnsupportedFeature
	// awsClients changes the SDK options of --cloud-provider=aws
	// (WithAWSClientOptions).
	awsClients func(*aws.ClientOptions)
	// listener, if set, serves the HTTP endpoints instead of one opened on
	// --address (WithListener).
	listener net.Listener
}

// WithTransport wraps the transport of every client Run makes from its API
// server configuration (the local cloud's too, unless WithLocalCloudClient
// gives it one).
func WithTransport(wrap func(http.RoundTripper) http.RoundTripper) Option {
	return func(s *seams) { s.transport = wrap }
}

// WithSimulatedMetrics makes Run's pod loop, under
// --hpa-metrics-source=simulated, read its metrics from s: whoever holds s
// (tidal-local's demo, a test) sets the load. Without it, the simulated
// source starts with no load and every metric is invalid until one is set.
func WithSimulatedMetrics(s *metrics.Simulated) Option {
	return func(se *seams) { se.simulated = s }
}

// WithLocalCloudClient makes Run's local cloud create and delete Nodes with
// client: the local cloud stands for a cloud provider, which is not bound
// by tidal's own RBAC rules.
func WithLocalCloudClient(client kubernetes.Interface) Option {
	return func(s *seams) { s.localCloudClient = client }
}

// WithAWSClientOptions changes the options Run's AWS provider makes its SDK
// clients with (its endpoint, static credentials): a test that runs tidal
// beside others in one process gives them here instead of in the
// process's environment.
func WithAWSClientOptions(change func(*aws.ClientOptions)) Option {
	return func(s *seams) { s.awsClients = change }
}

// WithListener makes Run serve /healthz and /metrics on l, which its
// caller opened (on port 0, say) and so already knows the address of,
// instead of on a listener of its own on --address. Run closes l when it
// returns.
func WithListener(l net.Listener) Option {
	return func(s *seams) { s.listener = l }
}

// WithCloud wraps the cloud provider Run builds.
func WithCloud(wrap func(cloudprovider.CloudProvider) cloudprovider.CloudProvider) Option {
	return func(s *seams) { s.cloud = wrap }
}

// Run runs tidal until ctx ends: the HTTP endpoints at once, and the loops
// while this replica is the leader (or always, without leader election).
// opts must have been validated.
func Run(ctx context.Context, opts *config.Options, options ...Option) error {
	logger := klog.FromContext(ctx)
	var s seams
	for _, o := range options {
		o(&s)
	}
	if s.listener != nil {
		defer s.listener.Close() // also when Run fails before serving
	}
	logUnsupported(s.unsupported)
	restCfg, err := restConfig(opts)
	if err != nil {
		return err
	}
	if s.transport != nil {
		restCfg.Wrap(s.transport)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var guard *dryRunGuard
	if opts.DryRun {
		// Outermost, so a refused write never reaches the network.
		guard = newDryRunGuard(opts, reg)
		restCfg.Wrap(guard.wrap)
		logger.Info("Dry run: deciding without acting", "lease", opts.LeaseName, "statusConfigMap", opts.ScaleUp.StatusConfigMapName)
	}
	client, err := kubernetes.NewForConfig(BuiltinClientConfig(restCfg, opts.KubeAPIContentType))
	if err != nil {
		return fmt.Errorf("kubernetes client: %w", err)
	}
	h := newHealth(opts.MaxInactivity, opts.MaxFailingTime)
	serverCtx, stopServer := context.WithCancel(ctx)
	defer stopServer()
	l, err := listen(opts.Address, s.listener)
	if err != nil {
		return err
	}
	serverDone := serveHTTP(serverCtx, l, reg, h)
	defer func() { stopServer(); <-serverDone }()
	logger.Info("Serving /healthz and /metrics", "address", l.Addr().String())

	env := &loopEnv{opts: opts, restConfig: restCfg, client: client, registry: reg, health: h,
		nodeMetrics: core.NewMetrics(reg, opts.EmitPerNodeGroupMetrics), podMetrics: newPodLoopMetrics(reg), seams: s, dryRun: guard}
	run := func(ctx context.Context) error { return runLoops(ctx, env) }
	if !opts.LeaderElect {
		return run(ctx)
	}
	return runAsLeader(ctx, client, opts, run)
}

func restConfig(opts *config.Options) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if opts.Kubeconfig != "" || opts.Kubernetes != "" {
		cfg, err = clientcmd.BuildConfigFromFlags(opts.Kubernetes, opts.Kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes client configuration (--kubeconfig=%q, --kubernetes=%q): %w", opts.Kubeconfig, opts.Kubernetes, err)
	}
	cfg.QPS, cfg.Burst = opts.KubeClientQPS, opts.KubeBurst
	cfg.UserAgent = userAgent(opts.UserAgent)
	return cfg, nil
}

// BuiltinClientConfig is cfg for a client of built-in objects only (a
// kubernetes.Interface): its requests in contentType, as
// --kube-api-content-type says, and its replies in contentType or else JSON.
// The clients of custom resources, scale subresources and the metrics APIs
// keep cfg's JSON: the API server serves custom resources in JSON only.
func BuiltinClientConfig(cfg *rest.Config, contentType string) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.ContentType = contentType
	out.AcceptContentTypes = contentType
	if contentType != config.ContentTypeJSON {
		out.AcceptContentTypes += "," + config.ContentTypeJSON
	}
	return out
}

// userAgent is name/version (os/arch), as client-go's default user agent
// but with tidal's version instead of Kubernetes'.
func userAgent(name string) string {
	return fmt.Sprintf("%s/%s (%s/%s)", name, version.Get(), runtime.GOOS, runtime.GOARCH)
}

// loopEnv is what the loops are built from, made once per process (as are
// the metrics); the loops are made once per leadership term (term).
type loopEnv struct {
	opts        *config.Options
	restConfig  *rest.Config
	client      kubernetes.Interface
	registry    prometheus.Registerer
	health      *health
	nodeMetrics *core.Metrics
	podMetrics  *podLoopMetrics
	seams       seams
	// dryRun is shadow mode's guard, nil unless --dry-run.
	dryRun *dryRunGuard
	// warned sends the events of seams.unsupported in the first term only.
	warned sync.Once
}

// term is what one leadership term's loops share, made once by runLoops.
type term struct {
	*loopEnv
	factory  informers.SharedInformerFactory
	recorder record.EventRecorder
	nodeLoop *core.NodeLoop
}

// runLoops builds informers, the cloud provider and the loops, and runs them
// until ctx ends. It returns after every loop has stopped.
func runLoops(ctx context.Context, env *loopEnv) error {
	logger := klog.FromContext(ctx)
	opts, client := env.opts, env.client
	factory := NewInformerFactory(client)

	cloud, err := buildCloudProvider(ctx, env, opts)
	if err != nil {
		if ctx.Err() != nil {
			// Shut down (or the term ended) while the cloud started: its
			// error is the cancellation's, not a failure.
			return nil
		}
		return err
	}
	defer cloud.Cleanup()
	if env.seams.cloud != nil {
		cloud = env.seams.cloud(cloud)
	}
	if env.dryRun != nil {
		cloud = env.dryRun.cloud(cloud)
	}

	// Events get a client of their own, so that a burst of them (one per
	// pod a scale-up helps) never delays a taint or an eviction.
	eventsClient, err := kubernetes.NewForConfig(BuiltinClientConfig(env.restConfig, env.opts.KubeAPIContentType))
	if err != nil {
		return fmt.Errorf("kubernetes client for events: %w", err)
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: eventsClient.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	var recorder record.EventRecorder = broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: ComponentName})
	if env.dryRun != nil {
		recorder = dryRunRecorder{next: broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: DryRunComponentName})}
	}

	env.warned.Do(func() { eventUnsupported(ctx, client, recorder, opts, env.seams.unsupported) })

	nodeOpts := nodeopts.FromConfig(opts)
	nodeOpts.NominatePlannedPods = nominate(ctx, client.Discovery(), opts)
	loop, err := core.NewNodeLoop(ctx, core.Config{
		Cloud: cloud, Client: client, Factory: factory, Recorder: recorder, Metrics: env.nodeMetrics,
		Options: nodeOpts,
	})
	if err != nil {
		return err
	}
	t := &term{loopEnv: env, factory: factory, recorder: recorder, nodeLoop: loop}
	// Both loops are followed from now on: informers that never sync fail
	// /healthz too.
	env.health.track(nodeLoopName, loop.LastActivity)
	env.health.trackSuccess(nodeLoopName, loop.LastSuccess)
	defer env.health.untrack(nodeLoopName)
	runPodLoop, err := newPodLoop(t)
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok && ctx.Err() == nil {
			return fmt.Errorf("informer for %v did not sync", typ)
		}
	}
	// The loop's handlers receive the first List after the caches hold it.
	if !cache.WaitForCacheSync(ctx.Done(), loop.HasSynced) && ctx.Err() == nil {
		return fmt.Errorf("node loop's informer handlers did not sync")
	}
	if ctx.Err() != nil {
		return nil
	}
	logger.Info("Loops starting", "cloudProvider", cloud.Name(), "nodeGroups", len(cloud.NodeGroups()))
	var wg sync.WaitGroup
	if runPodLoop != nil {
		wg.Go(func() { runPodLoop(ctx) })
	}
	loop.Run(ctx)
	wg.Wait()
	return nil
}
