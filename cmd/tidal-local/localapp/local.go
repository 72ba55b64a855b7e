// Package localapp builds the tidal-local command: tidal against a real
// Kubernetes control plane embedded in the process (localcluster) and the
// local cloud, with a live timeline and the demo `make run` plays. It is a
// binary of its own so that the production tidal links no control plane.
package localapp

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/tidal-autoscaler/tidal/apis/autoscaling/v1alpha1"
	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
	"github.com/tidal-autoscaler/tidal/cmd/tidal/app"
	"github.com/tidal-autoscaler/tidal/config"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
	"github.com/tidal-autoscaler/tidal/localcluster"
	"github.com/tidal-autoscaler/tidal/version"
)

// localOptions are the flags only tidal-local has.
type localOptions struct {
	duration      time.Duration
	demo          bool
	dir           string
	clusterLog    bool
	apiServerPort int
	// etcdPort, etcdPeerPort and externalGRPCPort pin the other loopback
	// listeners; 0 picks free ports.
	etcdPort, etcdPeerPort, externalGRPCPort int
	showVersion                              bool
	// unsupported are the CA features the flags ask for that tidal lacks.
	unsupported []config.UnsupportedFeature
	// hpaObjects and simulatedMetrics: the pod loop's settings for the local
	// cluster, unless the user set --hpa-objects or --hpa-metrics-source.
	hpaObjects       bool
	simulatedMetrics bool
	// keepRunning keeps the cluster and tidal after the demo.
	keepRunning bool
	// externalGRPC serves the local cloud over the externalgrpc protocol
	// and has tidal reach it so (--cloud-provider=externalgrpc).
	externalGRPC bool
}

// cloudProvider checks --cloud-provider: tidal-local runs the local cloud,
// reached directly or through an externalgrpc server it starts.
func (lo *localOptions) cloudProvider(fs *pflag.FlagSet, opts *config.Options) error {
	if !fs.Changed("cloud-provider") {
		opts.CloudProvider = config.CloudProviderLocal
	}
	switch opts.CloudProvider {
	case config.CloudProviderLocal:
	case config.CloudProviderExternalGRPC:
		if opts.CloudConfig != "" {
			return fmt.Errorf("--cloud-config=%s: tidal-local serves its local cloud itself and writes the cloud config", opts.CloudConfig)
		}
		lo.externalGRPC = true
		opts.CloudProvider = config.CloudProviderLocal // Validate checks the local cloud's flags
	default:
		return fmt.Errorf("--cloud-provider=%s: tidal-local runs the local cloud, directly (local) or over gRPC (externalgrpc)", opts.CloudProvider)
	}
	return nil
}

// NewCommand returns the tidal-local command: tidal, with every flag of
// tidal, against an embedded cluster and the local cloud.
func NewCommand() *cobra.Command {
	opts := config.NewOptions()
	var logging *logsapi.LoggingConfiguration
	lo := &localOptions{demo: true}
	cmd := &cobra.Command{
		Use:   "tidal-local",
		Short: "Run tidal against an embedded Kubernetes cluster and a local cloud, with a live timeline",
		Long: "Starts a real Kubernetes control plane in this process (etcd, kube-apiserver, kube-scheduler, " +
			"controllers, simulated kubelets), a local cloud whose node groups create Nodes, and tidal's loops " +
			"against them. Prints a kubeconfig path for kubectl and a live timeline. Every flag of tidal applies.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if lo.showVersion {
				fmt.Fprintln(cmd.OutOrStdout(), "tidal-local", version.Get())
				return nil
			}
			if err := lo.cloudProvider(cmd.Flags(), opts); err != nil {
				return err
			}
			// The local cluster runs no HPA controller and no metrics
			// pipeline: drive HorizontalPodAutoscalers on simulated metrics.
			lo.hpaObjects = !cmd.Flags().Changed("hpa-objects")
			lo.simulatedMetrics = !cmd.Flags().Changed("hpa-metrics-source")
			localTimers(cmd.Flags(), opts)
			lo.unsupported = config.RequestedUnsupported(cmd.Flags())
			if err := opts.Validate(); err != nil {
				return err
			}
			if err := lo.validate(opts); err != nil {
				return err
			}
			if err := app.ApplyLogging(logging); err != nil {
				return err
			}
			ctx, stop := app.SignalContext()
			defer stop()
			return runLocal(ctx, opts, lo, cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	logging = app.AddFlags(cmd, opts)
	fs.DurationVar(&lo.duration, "duration", 0, "Stop after this long; 0 runs until Ctrl-C.")
	fs.BoolVar(&lo.demo, "demo", lo.demo, "Play the demo: a load step on a web Deployment, then a decline in two stages, with everything on, without provision-ahead and without deletion cost, then a summary; then scale to zero, and consolidation without and with --consolidation-replace. --demo=false starts an empty cluster for your own manifests; annotate their autoscalers with "+SimulatedLoadAnnotation+"=cpu=1500m (METRIC=TOTAL,...) to set the load they see.")
	fs.BoolVar(&lo.keepRunning, "keep-running", false, "After the demo, keep the cluster and tidal running until Ctrl-C (or --duration).")
	fs.StringVar(&lo.dir, "dir", "", "Directory for the cluster's data, kubeconfig and logs. Empty uses a new temporary directory, removed at exit.")
	fs.BoolVar(&lo.clusterLog, "cluster-log", false, "Write the control plane's own logs (apiserver, scheduler, controllers) to cluster.log in the directory.")
	fs.IntVar(&lo.apiServerPort, "api-server-port", 0, "Loopback port of the API server; 0 picks a free one.")
	fs.IntVar(&lo.etcdPort, "etcd-port", 0, "Loopback port of etcd's clients; 0 picks a free one.")
	fs.IntVar(&lo.etcdPeerPort, "etcd-peer-port", 0, "Loopback port of etcd's peers; 0 picks a free one.")
	fs.IntVar(&lo.externalGRPCPort, "externalgrpc-port", 0, "Loopback port of the externalgrpc server of the local cloud (--cloud-provider=externalgrpc); 0 picks a free one.")
	fs.BoolVar(&lo.showVersion, "version", false, "Print tidal-local's version and exit.")
	cmd.SetFlagErrorFunc(app.FlagError)
	app.SetGroupedHelp(cmd, app.FlagSection{Title: "tidal-local's flags", Names: []string{
		"demo", "keep-running", "duration", "dir", "cluster-log", "api-server-port", "etcd-port", "etcd-peer-port", "externalgrpc-port", "version"}})
	return cmd
}

func runLocal(ctx context.Context, opts *config.Options, lo *localOptions, out io.Writer) error {
	if lo.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, lo.duration)
		defer cancel()
	}
	dir := lo.dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "tidal-local-")
		if err != nil {
			return fmt.Errorf("create working directory: %w", err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	var clusterLog io.Writer
	if lo.clusterLog {
		f, err := os.Create(filepath.Join(dir, "cluster.log"))
		if err != nil {
			return fmt.Errorf("create cluster log: %w", err)
		}
		defer f.Close()
		clusterLog = f
	}
	started := time.Now()
	fmt.Fprintln(out, "Starting the local cluster (etcd, kube-apiserver, kube-scheduler, controllers, simulated kubelets)...")
	cluster, err := localcluster.Start(ctx, localcluster.Options{
		Dir: filepath.Join(dir, "cluster"), APIServerPort: lo.apiServerPort, LogOutput: clusterLog,
		EtcdPort: lo.etcdPort, EtcdPeerPort: lo.etcdPeerPort,
	})
	if err != nil {
		return fmt.Errorf("local cluster: %w", err)
	}
	defer cluster.Stop()

	logFile, err := os.Create(filepath.Join(dir, "tidal.log"))
	if err != nil {
		return fmt.Errorf("create tidal log: %w", err)
	}
	defer logFile.Close()
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(verbosity()), textlogger.Output(logFile)))
	ctx = klog.NewContext(ctx, logger)

	fmt.Fprintf(out, "Cluster ready in %.1fs.\n  kubectl --kubeconfig %s get nodes,pods -A\n  tidal's log: %s\n\n",
		time.Since(started).Seconds(), cluster.KubeconfigPath, logFile.Name())
	// PodAutoscalers are served, or told they are not (below): never
	// refused by a missing CRD nor ignored.
	if err := installPodAutoscalerCRD(ctx, cluster.Config); err != nil {
		return err
	}
	runOpts := *opts
	runOpts.Kubeconfig, runOpts.Kubernetes = cluster.KubeconfigPath, ""
	if lo.hpaObjects {
		runOpts.HPA.HPAObjects = true
	}
	if lo.simulatedMetrics {
		runOpts.HPA.MetricsSource = config.MetricsSourceSimulated
	}
	if lo.externalGRPC {
		serveCtx, stopServing := context.WithCancel(ctx)
		wait, err := serveLocalCloud(serveCtx, cluster.Client, &runOpts, dir, lo.externalGRPCPort)
		if err != nil {
			stopServing()
			return err
		}
		defer func() { stopServing(); _ = wait() }()
		fmt.Fprintf(out, "The local cloud is served over externalgrpc; tidal's --cloud-config: %s\n\n", runOpts.CloudConfig)
	}
	// The demo sets the load through sim (sim.Set("demo/cpu", ...)).
	sim := metrics.NewSimulated()

	tl := newTimeline(cluster.Client, out, started)
	timelineCtx, stopTimeline := context.WithCancel(ctx)
	timelineDone := make(chan struct{})
	go func() { defer close(timelineDone); tl.run(timelineCtx) }()
	defer func() { stopTimeline(); <-timelineDone }()
	if runOpts.HPA.MetricsSource == config.MetricsSourceSimulated {
		stopLoads, err := watchSimulatedLoads(ctx, cluster, sim, tl)
		if err != nil {
			return err
		}
		defer stopLoads()
	}
	if lo.demo {
		prices, err := poolPrices(opts.LocalNodeGroups)
		if err != nil {
			return err
		}
		story := &demoStory{client: cluster.Client, opts: runOpts, sim: sim, tl: tl, out: out, prices: prices}
		if err := story.play(ctx); err != nil {
			return err
		}
		if err := playZeroDemo(ctx, cluster.Client, cluster.Config, runOpts, sim, tl, out); err != nil {
			return err
		}
		cons := &consolidationDemo{client: cluster.Client, opts: runOpts, sim: sim, tl: tl, prices: prices}
		if err := playConsolidationDemo(ctx, cons, out); err != nil {
			return err
		}
		if !lo.keepRunning || ctx.Err() != nil {
			return nil
		}
		fmt.Fprintln(out, "\nThe demo is over; tidal keeps running (Ctrl-C stops it).")
	}
	if runOpts.HPA.HPAObjects {
		pas, err := v1alpha1.NewForConfig(cluster.Config)
		if err != nil {
			return err
		}
		defer refusePodAutoscalers(ctx, cluster.Client, pas, tl.note)()
	}
	if err := app.Run(ctx, &runOpts, app.WithSimulatedMetrics(sim), app.WithUnsupportedFeatures(lo.unsupported)); err != nil {
		return err
	}
	fmt.Fprintln(out, "Stopped cleanly.")
	return nil
}

// validate checks the flags only tidal-local has.
func (lo *localOptions) validate(opts *config.Options) error {
	if err := lo.checkDemo(opts); err != nil {
		return err
	}
	if lo.duration < 0 {
		return fmt.Errorf("--duration=%v must not be negative", lo.duration)
	}
	return lo.validatePorts()
}

// validatePorts checks the loopback ports: each a port number, and the
// ones pinned all different.
func (lo *localOptions) validatePorts() error {
	seen := map[int]string{}
	for _, p := range []struct {
		flag string
		port int
	}{{"api-server-port", lo.apiServerPort}, {"etcd-port", lo.etcdPort}, {"etcd-peer-port", lo.etcdPeerPort}, {"externalgrpc-port", lo.externalGRPCPort}} {
		if p.port < 0 || p.port > 65535 {
			return fmt.Errorf("--%s=%d is not a port number (0 picks a free one)", p.flag, p.port)
		}
		if other, dup := seen[p.port]; dup && p.port != 0 {
			return fmt.Errorf("--%s=%d: --%s has that port already", p.flag, p.port, other)
		}
		seen[p.port] = p.flag
	}
	if lo.externalGRPCPort != 0 && !lo.externalGRPC {
		return fmt.Errorf("--externalgrpc-port=%d is only used with --cloud-provider=externalgrpc", lo.externalGRPCPort)
	}
	return nil
}

// checkDemo refuses settings the demo cannot play with.
func (lo *localOptions) checkDemo(opts *config.Options) error {
	if !lo.demo {
		return nil
	}
	if !lo.hpaObjects && !opts.HPA.HPAObjects {
		return fmt.Errorf("--hpa-objects=false: the demo drives a HorizontalPodAutoscaler; add --demo=false to run without it")
	}
	if !lo.simulatedMetrics && opts.HPA.MetricsSource != config.MetricsSourceSimulated {
		return fmt.Errorf("--hpa-metrics-source=%s: the demo's load is simulated; add --demo=false to run without it", opts.HPA.MetricsSource)
	}
	if !opts.HPA.Enabled {
		return fmt.Errorf("--hpa=false: the demo needs the pod loop; add --demo=false to run without it")
	}
	return nil
}

// localTimers shortens, for flags the user did not set, the waits meant for
// production clusters, so that tidal-local reacts within seconds: a node
// unneeded for 10s goes, scale-down may follow a scale-up after 5s, the node
// loop runs every second (its scale-down plan, which a scale-in's choice of
// replicas reads, stays as fresh as the demo's load steps need), and the pod
// loop syncs every 5s and stabilizes scale-downs over 15s.
func localTimers(fs *pflag.FlagSet, opts *config.Options) {
	set := func(flag string, field *time.Duration, v time.Duration) {
		if !fs.Changed(flag) {
			*field = v
		}
	}
	set("scan-interval", &opts.ScanInterval, time.Second)
	set("scale-down-unneeded-time", &opts.ScaleDown.UnneededTime, 10*time.Second)
	set("scale-down-delay-after-add", &opts.ScaleDown.DelayAfterAdd, 5*time.Second)
	set("scale-down-delay-after-delete", &opts.ScaleDown.DelayAfterDelete, 0)
	set("hpa-downscale-stabilization", &opts.HPA.DownscaleStabilizationWindow, 15*time.Second)
	set("hpa-sync-period", &opts.HPA.SyncPeriod, 5*time.Second)
}

// verbosity reads klog's -v, which also sets the level of tidal's log in
// local mode.
func verbosity() int {
	for v := 10; v > 0; v-- {
		if klog.V(klog.Level(v)).Enabled() {
			return v
		}
	}
	return 0
}

// poolPrices are the prices per node-hour of the local cloud's pools, from
// its node-group file (path; empty: the built-in pools); pools without
// pricePerHour are left out.
func poolPrices(path string) (map[string]float64, error) {
	cfg, err := local.LoadConfig(path)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, g := range cfg.NodeGroups {
		if g.PricePerHour != nil {
			out[g.Name] = *g.PricePerHour
		}
	}
	return out, nil
}
