package localapp

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/tidal-autoscaler/tidal/cmd/tidal/app"

	"github.com/tidal-autoscaler/tidal/config"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
)

// demoStory plays the demo once per demoPasses entry, each time against a
// fresh run of tidal, and prints what the runs measured.
type demoStory struct {
	client kubernetes.Interface
	opts   config.Options
	sim    *metrics.Simulated
	tl     *timeline
	out    io.Writer
	// prices are the local pools' prices per node-hour.
	prices map[string]float64
}

// passSettings are what a pass turns on: provision-ahead and pod deletion
// cost on scale-in; title heads its column.
type passSettings struct {
	ahead, cost bool
	title       string
}

// demoPasses: everything on, then without provision-ahead, then without
// deletion cost.
var demoPasses = []passSettings{
	{ahead: true, cost: true, title: "with provision-ahead and deletion cost"},
	{ahead: false, cost: true, title: "without provision-ahead"},
	{ahead: true, cost: false, title: "without deletion cost"},
}

// play runs the passes and prints the summary table. It returns the first
// error of tidal itself; a pass that fails is reported in the table.
func (s *demoStory) play(ctx context.Context) error {
	var results []passResult
	for i, set := range demoPasses {
		res, runErr := s.pass(ctx, i+1, set)
		results = append(results, res)
		if runErr != nil {
			return runErr
		}
		if ctx.Err() != nil {
			break
		}
	}
	printDemoSummary(s.out, results)
	return nil
}

// pass runs tidal with provision-ahead and deletion cost set as asked and
// plays the load curve in namespace demo-<n>. It returns tidal's error, if
// it failed.
func (s *demoStory) pass(ctx context.Context, n int, set passSettings) (passResult, error) {
	opts := s.opts
	opts.ScaleUp.ProvisionAhead = set.ahead
	opts.HPA.ScaleInDeletionCost = set.cost
	// The pass reads tidal's metrics: it opens the listener itself, so it
	// knows the port even when --address asks for any (port 0).
	l, err := net.Listen("tcp", opts.Address)
	if err != nil {
		return passResult{}, fmt.Errorf("--address=%s: %w", opts.Address, err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- app.Run(runCtx, &opts, app.WithSimulatedMetrics(s.sim), app.WithListener(l)) }()
	addr := dialAddress(l.Addr().String())
	p := &demoPass{client: s.client, sim: s.sim, tl: s.tl, ns: fmt.Sprintf("demo-%d", n), settings: set,
		stabilization: opts.HPA.DownscaleStabilizationWindow,
		plateauHold:   opts.ScaleDown.UnneededTime + demoHold, prices: s.prices,
		scaleUps:  func() (float64, error) { return app.MetricSum(addr, "tidal_scale_ups_total") },
		evictions: func() (float64, error) { return app.MetricSum(addr, "tidal_evicted_pods_total") }}
	res, err := p.play(ctx)
	if err != nil && ctx.Err() == nil {
		s.tl.note("%s stopped: %v", p.label(), err)
		if res.failed == "" {
			res.failed = err.Error()
		}
	}
	if err := p.tearDown(ctx); err != nil && ctx.Err() == nil {
		s.tl.note("%s: clean-up: %v", p.label(), err)
	}
	stop()
	return res, <-done
}

// printDemoSummary prints one column per pass.
func printDemoSummary(out io.Writer, results []passResult) {
	if len(results) == 0 {
		return
	}
	fmt.Fprintf(out, "\nSummary: load %d -> %d requests/s on web, %d per replica (1 CPU each), then declining to %d, held, and declining to %d; every figure measured in this run.\n",
		demoBaseLoad, demoPeakLoad, demoPerReplica, demoMiddleLoad, demoBaseLoad)
	w := tabwriter.NewWriter(out, 0, 0, 3, ' ', 0)
	header := []string{""}
	for _, r := range results {
		header = append(header, r.title)
	}
	rows := [][]string{header}
	add := func(label string, cell func(passResult) string) {
		row := []string{label}
		for _, r := range results {
			row = append(row, cell(r))
		}
		rows = append(rows, row)
	}
	add("load step -> node group scale-up request", func(r passResult) string { return dur(r.stepToScaleUp) })
	add("load step -> every new replica Ready", func(r passResult) string { return dur(r.stepToReady) })
	add("longest wait of a pod for a node", func(r passResult) string { return dur(r.longestWait) })
	add("pod-seconds spent waiting for nodes", func(r passResult) string { return fmt.Sprintf("%.1f", r.totalWait.Seconds()) })
	add(fmt.Sprintf("nodes at the end of the %d requests/s plateau", demoMiddleLoad), func(r passResult) string {
		if r.plateauNodes == 0 {
			return "-"
		}
		return fmt.Sprintf("%d", r.plateauNodes)
	})
	add("load fall -> replicas back down", func(r passResult) string { return dur(r.fallToReplicas) })
	add("load fall -> added nodes removed", func(r passResult) string { return dur(r.fallToNodes) })
	add("evictions during scale-down", func(r passResult) string {
		if r.evictions < 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f", r.evictions)
	})
	for _, pool := range demoPools(results) {
		add("node-hours, pool "+pool, func(r passResult) string { return fmt.Sprintf("%.4f", r.nodeHours[pool]) })
	}
	add("cost per hour at the end", func(r passResult) string {
		if r.endCost < 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", r.endCost)
	})
	add("outcome", func(r passResult) string {
		if r.failed != "" {
			return "incomplete: " + r.failed
		}
		return "complete"
	})
	for _, row := range rows {
		fmt.Fprintln(w, strings.Join(row, "\t")+"\t")
	}
	w.Flush()
}

func demoPools(results []passResult) []string {
	set := map[string]bool{}
	for _, r := range results {
		for p := range r.nodeHours {
			set[p] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// dur is a measured time, or "-" for one not measured.
func dur(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return seconds(d)
}

// dialAddress turns a listen address (":8085", "0.0.0.0:8085") into one to
// connect to on this machine.
func dialAddress(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
