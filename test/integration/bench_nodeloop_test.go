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
	"k8s.io/utils/ptr"

	"github.com/tidal-autoscaler/tidal/benchgen"
	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
	"github.com/tidal-autoscaler/tidal/cmd/tidal/app"
	"github.com/tidal-autoscaler/tidal/cmd/tidal/app/nodeopts"
	"github.com/tidal-autoscaler/tidal/config"
	"github.com/tidal-autoscaler/tidal/core"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

// BenchmarkNodeLoop times one iteration of tidal's node loop (RunOnce:
// the snapshot brought up to date from the informers' events, the cloud
// and the cluster observed, the scale-up decided and asked for, the
// scale-down planned) on bench-gen S2 loaded into the API server, with
// tidal's default flags but --max-bulk-soft-taint-count=0 (a soft taint is
// a change: with it an iteration is never "unchanged" until every unneeded
// node has one). Its node groups are the local cloud's, never launching
// (the cloud is not started): a scale-up stays upcoming.
//
//   - cold: the first iteration of a new tidal (new informers, synced
//     before the timer starts: sync-s is how long that took);
//   - unchanged: the iterations after it, with nothing changed in the
//     cluster but the heartbeats of the simulated kubelets.
//
// The phases' times come from tidal's own tidal_function_duration_seconds
// (ms per iteration).
func BenchmarkNodeLoop(b *testing.B) {
	b.Run("S2", func(b *testing.B) {
		c, loaded := loadCluster(b, benchgen.S2())
		b.Run("cold", func(b *testing.B) {
			var sync time.Duration
			total := phaseTimes{}
			b.StopTimer()
			for range b.N {
				t := startBenchTidal(b, c)
				sync += t.synced
				b.StartTimer()
				t.runOnce(b)
				b.StopTimer()
				total.add(t.phaseTimes(b), 1)
				t.stop()
			}
			b.ReportMetric(sync.Seconds()/float64(b.N), "sync-s")
			total.report(b)
			loaded.report(b)
		})
		b.Run("unchanged", func(b *testing.B) {
			t := startBenchTidal(b, c)
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
			after.report(b)
			loaded.report(b)
		})
	})
}

// loadCluster generates the cluster of p and loads it into the cluster
// (see loader), and says how long that took and what the control plane
// made of it.
func loadCluster(b *testing.B, p benchgen.Params) (*benchgen.Cluster, loadReport) {
	b.Helper()
	c := benchgen.Generate(p)
	l, err := newLoader(benchCluster(b).Config, c)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := l.load(context.Background()); err != nil {
		b.Fatal(err)
	}
	r := loadReport{took: time.Since(start)}
	if r.census, err = l.census(context.Background()); err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "loaded %d nodes and %d pods in %v: %s\n", len(c.Nodes), len(c.RunningPods)+len(c.PendingPods),
		r.took.Round(time.Second), r.census)
	return c, r
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
func startBenchTidal(b *testing.B, c *benchgen.Cluster) *benchTidal {
	b.Helper()
	ctx, cancel := context.WithCancel(testenv.LogOnFailure(context.Background(), b, 1))
	t := &benchTidal{ctx: ctx, stopAll: cancel, opts: config.NewOptions(), metrics: prometheus.NewRegistry()}
	t.opts.ScaleDown.MaxBulkSoftTaintCount = 0
	cfg := rest.CopyConfig(benchCluster(b).Config)
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
	if t.cloud, err = local.New(t.client, benchCloudConfig(c)); err != nil {
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
var phases = []string{"main", "snapshotSync", "cloudProviderRefresh", "scaleUp", "scaleDown", "scaleDown:plan"}

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

// report adds each phase's mean time, in ms, to b's results.
func (p phaseTimes) report(b *testing.B) {
	for _, name := range phases {
		if v := p[name]; v[1] > 0 {
			b.ReportMetric(v[0]*1000/v[1], name+"-ms")
		}
	}
}

// cloudConfig is the local cloud of the generated node groups: their
// shapes, zones, labels and taints, never below or above the generator's
// sizes' bounds.
func benchCloudConfig(c *benchgen.Cluster) *local.Config {
	cfg := &local.Config{}
	for _, g := range c.NodeGroups {
		alloc := g.Template.Status.Allocatable
		spec := local.GroupSpec{
			Name: g.ID, MinSize: g.MinSize, MaxSize: g.MaxSize, Zone: g.Zone,
			InstanceType: fmt.Sprintf("bench-%d", alloc.Cpu().Value()),
			CPU:          alloc.Cpu().DeepCopy(), Memory: alloc.Memory().DeepCopy(), Pods: alloc.Pods().Value(),
			Labels:       map[string]string{benchgen.LabelNodeGroup: g.ID},
			PricePerHour: ptr.To(0.05 * float64(alloc.Cpu().Value())),
		}
		if g.Taint != nil {
			spec.Taints = []corev1.Taint{*g.Taint}
		}
		cfg.NodeGroups = append(cfg.NodeGroups, spec)
	}
	return cfg
}
