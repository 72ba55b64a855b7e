package integration

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/tidal-autoscaler/tidal/benchgen"
	"github.com/tidal-autoscaler/tidal/benchgen/benchload"
	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
	"github.com/tidal-autoscaler/tidal/cmd/tidal/app"
	"github.com/tidal-autoscaler/tidal/cmd/tidal/app/nodeopts"
	"github.com/tidal-autoscaler/tidal/config"
	"github.com/tidal-autoscaler/tidal/core"
	"github.com/tidal-autoscaler/tidal/localcluster"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// BenchmarkNodeLoop times one iteration of tidal's node loop (RunOnce:
// the snapshot brought up to date from the informers' events, the cloud
// and the cluster observed, the scale-up decided and asked for, the
// scale-down planned) on bench-gen S2 and S3, each loaded into a local
// cluster of its own through the API server, with tidal's default flags
// but --max-bulk-soft-taint-count=0 (a soft taint is a change: with it an
// iteration is never "unchanged" until every unneeded node has one). Its
// node groups are the local cloud's, never launching (the cloud is not
// started): a scale-up stays upcoming.
//
//   - cold: the first iteration of a new tidal (new informers, synced
//     before the timer starts: sync-s is how long that took);
//   - unchanged: the iterations after it, with nothing changed in the
//     cluster but the heartbeats of the simulated kubelets;
//   - onechange: the iterations after it, each after one change made
//     through the API server (see oneChange), seen by tidal's informers
//     before the timer starts.
//
// The phases' times come from tidal's own tidal_function_duration_seconds
// (ms per iteration).
func BenchmarkNodeLoop(b *testing.B) {
	for _, size := range []struct {
		name string
		p    benchgen.Params
	}{{"S2", benchgen.S2()}, {"S3", benchgen.S3()}} {
		b.Run(size.name, func(b *testing.B) { benchNodeLoop(b, loadCluster(b, benchClusters.LeaseOwn(b), size.p)) })
	}
}

// benchNodeLoop runs the node loop's benchmarks on the loaded cluster e.
func benchNodeLoop(b *testing.B, e *benchEnv) {
	b.Run("cold", func(b *testing.B) {
		var sync time.Duration
		total := phaseTimes{}
		b.StopTimer()
		for range b.N {
			t := startBenchTidal(b, e)
			sync += t.synced
			b.StartTimer()
			t.runOnce(b)
			b.StopTimer()
			total.add(t.phaseTimes(b), 1)
			t.stop()
		}
		b.ReportMetric(sync.Seconds()/float64(b.N), "sync-s")
		total.report(b, b.N)
		e.loaded.report(b)
	})
	b.Run("unchanged", func(b *testing.B) {
		t := startBenchTidal(b, e)
		defer t.stop()
		t.runOnce(b)
		before := t.phaseTimes(b)
		b.ResetTimer()
		for range b.N {
			t.runOnce(b)
		}
		b.StopTimer()
		after := t.phaseTimes(b)
		after.add(before, -1)
		after.report(b, b.N)
		e.loaded.report(b)
	})
	// The changes go on from one run of onechange to the next (go test
	// runs it once with b.N=1 first): each run starts where the last
	// left the cluster.
	var changes *oneChange
	b.Run("onechange", func(b *testing.B) {
		t := startBenchTidal(b, e)
		defer t.stop()
		if changes == nil {
			changes = newOneChange(b, e, t)
		}
		t.runOnce(b)
		before := t.phaseTimes(b)
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			changes.next(b, t)
			start := time.Now()
			b.StartTimer()
			t.runOnce(b)
			changes.observe(time.Since(start))
		}
		b.StopTimer()
		after := t.phaseTimes(b)
		after.add(before, -1)
		after.report(b, b.N)
		changes.report(b)
		e.loaded.report(b)
	})
}

// benchEnv is a generated cluster loaded into a local cluster.
type benchEnv struct {
	lc     *localcluster.Cluster
	c      *benchgen.Cluster
	l      *loader
	loaded loadReport
}

// loadCluster generates the cluster of p and loads it into lc (see
// loader), and says how long that took and what the control plane made of
// it.
func loadCluster(b *testing.B, lc *localcluster.Cluster, p benchgen.Params) *benchEnv {
	b.Helper()
	e := &benchEnv{lc: lc, c: benchgen.Generate(p)}
	var err error
	if e.l, err = newLoader(lc.Config, e.c); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := e.l.load(context.Background()); err != nil {
		b.Fatal(err)
	}
	e.loaded.took = time.Since(start)
	if e.loaded.census, err = e.l.census(context.Background()); err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "loaded %d nodes and %d pods in %v: %s\n", len(e.c.Nodes), len(e.c.RunningPods)+len(e.c.PendingPods),
		e.loaded.took.Round(time.Second), e.loaded.census)
	return e
}

// loadReport is how long a load took and the cluster it left.
type loadReport struct {
	took   time.Duration
	census census
}

// report adds the load time and the pods the scheduler left unschedulable
// to b's results.
func (r loadReport) report(b *testing.B) {
	b.ReportMetric(r.took.Seconds(), "load-s")
	b.ReportMetric(float64(r.census.unschedulable), "unschedulable-pods")
}

// tidal is the node loop of one tidal run, built as tidal builds it.
type benchTidal struct {
	ctx     context.Context
	stopAll func()
	opts    *config.Options
	cloud   *local.Cloud
	client  kubernetes.Interface
	factory informers.SharedInformerFactory
	events  record.EventBroadcaster
	metrics *prometheus.Registry
	loop    *core.NodeLoop
	// synced is how long the informers took to sync.
	synced time.Duration
}

// startTidal builds a node loop over the cluster as app.Run does (its
// informer factory, its own clients, events to the API server) and waits
// until its informers and handlers have synced.
func startBenchTidal(b *testing.B, e *benchEnv) *benchTidal {
	b.Helper()
	ctx, cancel := context.WithCancel(testenv.LogOnFailure(context.Background(), b, 1))
	t := &benchTidal{ctx: ctx, stopAll: cancel, opts: config.NewOptions(), metrics: prometheus.NewRegistry()}
	t.opts.ScaleDown.MaxBulkSoftTaintCount = 0
	cfg := app.BuiltinClientConfig(e.lc.Config, t.opts.KubeAPIContentType)
	cfg.QPS, cfg.Burst = t.opts.KubeClientQPS, t.opts.KubeBurst
	rest.AddUserAgent(cfg, app.ComponentName)
	var err error
	if t.client, err = kubernetes.NewForConfig(cfg); err != nil {
		b.Fatal(err)
	}
	eventsClient, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	t.events = record.NewBroadcaster(record.WithContext(ctx))
	t.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: eventsClient.CoreV1().Events("")})
	if t.cloud, err = local.New(t.client, benchload.LocalCloud(e.c)); err != nil {
		b.Fatal(err)
	}
	t.factory = app.NewInformerFactory(t.client)
	t.loop = t.newLoop(b)
	start := time.Now()
	t.factory.Start(ctx.Done())
	t.factory.WaitForCacheSync(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), t.loop.HasSynced) {
		b.Fatal("node loop's handlers did not sync")
	}
	t.synced = time.Since(start)
	return t
}

// newLoop builds the node loop on t's informers.
func (t *benchTidal) newLoop(b *testing.B) *core.NodeLoop {
	b.Helper()
	loop, err := core.NewNodeLoop(t.ctx, core.Config{
		Cloud: t.cloud, Client: t.client, Factory: t.factory, Metrics: core.NewMetrics(t.metrics, false),
		Recorder: t.events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: app.ComponentName}),
		Options:  nodeopts.FromConfig(t.opts),
	})
	if err != nil {
		b.Fatal(err)
	}
	return loop
}

func (t *benchTidal) runOnce(b *testing.B) {
	if err := t.loop.RunOnce(t.ctx); err != nil {
		b.Fatalf("node loop iteration: %v", err)
	}
}

func (t *benchTidal) stop() {
	t.stopAll()
	t.factory.Shutdown()
	t.events.Shutdown()
}

// phases are the node loop's functions reported, as tidal's metrics name
// them.
// scaleUp:filterSchedulable and scaleUp:estimate are observed only when the
// scale-up is decided anew, not given the last decision again.
var phases = []string{"main", "snapshotSync", "cloudProviderRefresh", "updateClusterState", "scaleUp",
	"scaleUp:filterSchedulable", "scaleUp:estimate", "scaleDown", "scaleDown:plan"}

// phaseTimes are the total seconds and count of each phase's observations.
type phaseTimes map[string][2]float64

// phaseTimes reads the phases' totals from tidal's metrics.
func (t *benchTidal) phaseTimes(b *testing.B) phaseTimes {
	families, err := t.metrics.Gather()
	if err != nil {
		b.Fatal(err)
	}
	out := phaseTimes{}
	for _, f := range families {
		if f.GetName() != "tidal_function_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			h := m.GetHistogram()
			out[m.GetLabel()[0].GetValue()] = [2]float64{h.GetSampleSum(), float64(h.GetSampleCount())}
		}
	}
	return out
}

// add adds sign times o to p.
func (p phaseTimes) add(o phaseTimes, sign float64) {
	for k, v := range o {
		p[k] = [2]float64{p[k][0] + sign*v[0], p[k][1] + sign*v[1]}
	}
}

// report adds each phase's time per iteration of n, in ms, to b's results,
// and how many of them decided the scale-up anew.
func (p phaseTimes) report(b *testing.B, n int) {
	for _, name := range phases {
		if v := p[name]; v[1] > 0 {
			b.ReportMetric(v[0]*1000/float64(n), name+"-ms")
		}
	}
	b.ReportMetric(p["scaleUp:filterSchedulable"][1]/float64(n), "scaleup-decided")
}
