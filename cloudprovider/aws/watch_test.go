package aws

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/aws/awstest"
)

// waitTimeout bounds, in real time, each wait of these tests for the
// provider's goroutines; they wait on conditions, never on durations.
const waitTimeout = time.Minute

// watched makes a provider whose failed launches are told to the returned
// channel, through cloudprovider.InstanceErrorNotifier as the node loop
// registers; the provider is cleaned up with the test.
func (e *env) watched(cfg Config) (*Cloud, <-chan string) {
	e.t.Helper()
	return e.watchedIn(e.ctx, cfg)
}

// watchedIn is watched with the provider's context (its leadership term)
// given.
func (e *env) watchedIn(ctx context.Context, cfg Config) (*Cloud, <-chan string) {
	e.t.Helper()
	c, err := New(ctx, cfg, e.clients(), WithClock(e.clock))
	if err != nil {
		e.t.Fatalf("new cloud: %v", err)
	}
	e.t.Cleanup(func() { _ = c.Cleanup() })
	n, ok := any(c).(cloudprovider.InstanceErrorNotifier)
	if !ok {
		e.t.Fatal("the AWS provider does not implement cloudprovider.InstanceErrorNotifier: the node loop is never told of failed launches between its scans")
	}
	told := make(chan string, 10)
	n.NotifyInstanceErrors(func(group string) { told <- group })
	return c, told
}

// watching lists the groups whose launches are being watched.
func watching(c *Cloud) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return sortedKeys(c.watches)
}

// until waits, in real time, for cond; on timeout it fails with what and
// the provider's log.
func (e *env) until(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s; provider log:\n%s", what, e.log.String())
		}
		time.Sleep(time.Millisecond)
	}
}

// step moves the shared clock by d once every watch of c is waiting on its
// timer (the emulator's ticker is the clock's one other waiter), so that
// no read is left between two steps; then the emulator acts on the new
// time.
func (e *env) step(c *Cloud, d time.Duration) {
	e.t.Helper()
	e.until("the watches to wait for their next read", func() bool {
		return e.clock.Waiters() == 1+len(watching(c))
	})
	e.clock.Step(d)
	e.srv.Reconcile()
}

func (e *env) told(ch <-chan string) string {
	e.t.Helper()
	select {
	case g := <-ch:
		return g
	case <-time.After(waitTimeout):
		e.t.Fatalf("the provider never told of the failed launch; provider log:\n%s", e.log.String())
		return ""
	}
}

func activityReads(srv *awstest.Server, group string) []awstest.Request {
	var out []awstest.Request
	for _, r := range srv.RequestsOf("DescribeScalingActivities") {
		if r.Params.Get("AutoScalingGroupName") == group {
			out = append(out, r)
		}
	}
	return out
}

// A stock-out is told to the node loop one read after the request, with
// no refresh: the group's placeholders carry it at once, the watch ends,
// and the refresh the node loop makes then agrees.
func TestLaunchWatchTellsOfAStockOutWithoutARefresh(t *testing.T) {
	e := newEnv(t)
	e.group("spot", 0, 5, 0, discoveredTags(nil))
	e.group("ondemand", 0, 5, 0, discoveredTags(nil))
	c, told := e.watched(Config{AutoDiscovery: discovery()})
	if err := e.srv.SetLaunchFailure("spot", awstest.InsufficientCapacity("m5.xlarge", "us-east-1a")); err != nil {
		t.Fatal(err)
	}
	spot, ondemand := groupByID(t, c, "spot"), groupByID(t, c, "ondemand")
	e.srv.ResetRequests()
	for _, g := range []cloudprovider.NodeGroup{spot, ondemand} {
		if err := g.IncreaseSize(context.Background(), 2); err != nil {
			t.Fatal(err)
		}
	}
	if got := watching(c); len(got) != 2 {
		t.Fatalf("watching %v after two increases, want both groups", got)
	}
	e.srv.Reconcile() // the spot launch fails, the on-demand ones start
	e.step(c, DefaultLaunchWatchInterval)
	if g := e.told(told); g != "spot" {
		t.Fatalf("told of %q, want spot", g)
	}
	if n := len(e.srv.RequestsOf("DescribeAutoScalingGroups")); n != 0 {
		t.Fatalf("%d DescribeAutoScalingGroups: the failure must come from the watch, not a refresh", n)
	}
	instances, err := spot.Nodes()
	if err != nil || len(instances) != 2 {
		t.Fatalf("spot instances %+v, %v", instances, err)
	}
	for _, in := range instances {
		info := in.Status.ErrorInfo
		if info == nil || info.ErrorClass != cloudprovider.OutOfResourcesErrorClass || info.ErrorCode != "InsufficientInstanceCapacity" ||
			!strings.Contains(info.ErrorMessage, "do not have sufficient m5.xlarge capacity") {
			t.Fatalf("spot placeholder %s carries %+v, want the stock-out", in.Id, info)
		}
	}
	if got := watching(c); len(got) != 1 || got[0] != "ondemand" {
		t.Fatalf("watching %v after the stock-out was told, want only ondemand", got)
	}
	if !strings.Contains(e.log.String(), "Launch failed; telling the node loop") {
		t.Fatalf("the report is not logged:\n%s", e.log.String())
	}
	// The node loop's refresh reads the same failure.
	if err := c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if instances, _ := spot.Nodes(); instances[0].Status.ErrorInfo == nil {
		t.Fatalf("the refresh lost the failure: %+v", instances)
	}
	select {
	case g := <-told:
		t.Fatalf("told again of %s", g)
	default:
	}
}

// The watch reads once per interval at most, ends when every launch is in
// service, and reads nothing more.
func TestLaunchWatchReadsOncePerIntervalAndEndsInService(t *testing.T) {
	e := newEnv(t) // launches take 30s
	e.group("web", 0, 5, 1, discoveredTags(nil))
	c, told := e.watched(Config{AutoDiscovery: discovery()})
	web := groupByID(t, c, "web")
	e.srv.ResetRequests()
	start := e.clock.Now()
	if err := web.IncreaseSize(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	e.srv.Reconcile()
	for i := 0; len(watching(c)) > 0; i++ {
		if i == 100 {
			t.Fatalf("still watching after 100 half intervals, launches in service since %v; log:\n%s", start.Add(30*time.Second), e.log.String())
		}
		e.step(c, DefaultLaunchWatchInterval/2)
	}
	c.watchers.Wait()
	reads := activityReads(e.srv, "web")
	if len(reads) < 2 || len(reads) > 30/2+1 {
		t.Fatalf("%d reads over the 30s launch, want one per 2s interval at most", len(reads))
	}
	for i, r := range reads {
		if gap := r.Time.Sub(start); i == 0 && gap < DefaultLaunchWatchInterval {
			t.Fatalf("first read %v after the request, want an interval", gap)
		}
		if i > 0 {
			if gap := r.Time.Sub(reads[i-1].Time); gap < DefaultLaunchWatchInterval {
				t.Fatalf("reads %d and %d %v apart, want %v at least", i-1, i, gap, DefaultLaunchWatchInterval)
			}
		}
	}
	if last := reads[len(reads)-1].Time; last.Before(start.Add(30 * time.Second)) {
		t.Fatalf("the watch ended at %v, before the launches were in service", last.Sub(start))
	}
	for i := 0; i < 10; i++ {
		e.step(c, DefaultLaunchWatchInterval)
	}
	if n := len(activityReads(e.srv, "web")); n != len(reads) {
		t.Fatalf("%d reads after the watch ended", n-len(reads))
	}
	if n := len(e.srv.RequestsOf("DescribeAutoScalingGroups")); n != 0 {
		t.Fatalf("the watch made %d DescribeAutoScalingGroups calls", n)
	}
	if len(told) != 0 {
		t.Fatalf("told of a failure: %s", <-told)
	}
}

// A read that fails is logged and tried again later, with the interval
// doubled; it never counts as "no failure", and the failure read next is
// told.
func TestLaunchWatchKeepsWatchingThroughAPIErrors(t *testing.T) {
	e := newEnv(t)
	e.group("spot", 0, 5, 0, discoveredTags(nil))
	c, told := e.watched(Config{AutoDiscovery: discovery()})
	if err := e.srv.SetLaunchFailure("spot", awstest.InsufficientCapacity("m5.xlarge", "us-east-1a")); err != nil {
		t.Fatal(err)
	}
	spot := groupByID(t, c, "spot")
	// Two reads fail, each after the SDK's retries: throttled, then 503.
	e.srv.FailRequests("DescribeScalingActivities", DefaultMaxAttempts, awstest.Throttling())
	e.srv.FailRequests("DescribeScalingActivities", DefaultMaxAttempts, awstest.ServiceUnavailable())
	e.srv.ResetRequests()
	if err := spot.IncreaseSize(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	e.srv.Reconcile()
	const interval = DefaultLaunchWatchInterval
	reads := func() int { return len(activityReads(e.srv, "spot")) }
	e.step(c, interval)
	e.until("the first read's attempts", func() bool { return reads() == DefaultMaxAttempts })
	e.step(c, interval) // the second read comes two intervals after the first
	if n := reads(); n != DefaultMaxAttempts {
		t.Fatalf("%d attempts one interval after a failed read, want the retry to wait 2 intervals", n)
	}
	e.step(c, interval)
	e.until("the second read's attempts", func() bool { return reads() == 2*DefaultMaxAttempts })
	e.step(c, 4*interval)
	if g := e.told(told); g != "spot" {
		t.Fatalf("told of %q", g)
	}
	log := e.log.String()
	if !strings.Contains(log, "Could not read the scaling activities of launches in flight") || !strings.Contains(log, "Throttling") ||
		!strings.Contains(log, "ServiceUnavailable") || !strings.Contains(log, "failedReads=2") {
		t.Fatalf("the failed reads are not logged:\n%s", log)
	}
	instances, _ := spot.Nodes()
	if len(instances) != 1 || instances[0].Status.ErrorInfo == nil {
		t.Fatalf("placeholders %+v, want the stock-out", instances)
	}
}

// A refresh whose activity read fails keeps the failure read before:
// "could not read" is not "no failure".
func TestRefreshKeepsTheLastFailureWhenActivitiesCannotBeRead(t *testing.T) {
	e := newEnv(t)
	e.group("spot", 0, 5, 0, discoveredTags(nil))
	c := e.cloud(Config{AutoDiscovery: discovery()}, nil)
	if err := e.srv.SetLaunchFailure("spot", awstest.InsufficientCapacity("m5.xlarge", "us-east-1a")); err != nil {
		t.Fatal(err)
	}
	spot := groupByID(t, c, "spot")
	if err := spot.IncreaseSize(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	e.srv.Reconcile()
	if err := c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if instances, _ := spot.Nodes(); len(instances) != 1 || instances[0].Status.ErrorInfo == nil {
		t.Fatalf("placeholders %+v, want the stock-out", instances)
	}
	e.srv.FailRequests("DescribeScalingActivities", DefaultMaxAttempts, awstest.ServiceUnavailable())
	e.clock.Step(11 * time.Second) // the converging interval
	if err := c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(e.srv.RequestsOf("DescribeScalingActivities")); n != 1+DefaultMaxAttempts {
		t.Fatalf("%d activity reads, want the refresh to have tried %d times", n, DefaultMaxAttempts)
	}
	instances, _ := spot.Nodes()
	if len(instances) != 1 || instances[0].Status.ErrorInfo == nil || instances[0].Status.ErrorInfo.ErrorCode != "InsufficientInstanceCapacity" {
		t.Fatalf("placeholders %+v after a failed activity read, want the stock-out read before; log:\n%s", instances, e.log.String())
	}
}

// A watch ends, and reads nothing more, when the requests are cancelled,
// when a refresh finds every instance in service, at its timeout, at
// Cleanup, and when the provider's context (the leadership term) ends;
// nothing is watched while no one is to be told.
func TestLaunchWatchEnds(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg Config
		end func(e *env, c *Cloud, g cloudprovider.NodeGroup, stop context.CancelFunc)
		log string
	}{
		"requests cancelled": {end: func(e *env, c *Cloud, g cloudprovider.NodeGroup, _ context.CancelFunc) {
			if err := g.DecreaseTargetSize(context.Background(), -1); err != nil {
				e.t.Fatal(err)
			}
		}},
		"refresh finds the instances in service": {
			cfg: Config{LaunchWatchInterval: time.Hour},
			end: func(e *env, c *Cloud, g cloudprovider.NodeGroup, _ context.CancelFunc) {
				e.srv.Reconcile()
				e.clock.Step(31 * time.Second)
				e.srv.Reconcile()
				if err := c.Refresh(context.Background()); err != nil {
					e.t.Fatal(err)
				}
			},
		},
		"timeout": {
			cfg: Config{LaunchWatchTimeout: 5 * time.Second},
			end: func(e *env, c *Cloud, g cloudprovider.NodeGroup, _ context.CancelFunc) {
				for i := 0; i < 4 && len(watching(c)) > 0; i++ {
					e.step(c, DefaultLaunchWatchInterval)
				}
			},
			log: "Stopped watching launches in flight: no outcome in time",
		},
		"cleanup": {end: func(e *env, c *Cloud, g cloudprovider.NodeGroup, _ context.CancelFunc) { _ = c.Cleanup() }},
		"context ends": {end: func(e *env, c *Cloud, g cloudprovider.NodeGroup, stop context.CancelFunc) {
			stop()
			e.until("the watch to end with the context", func() bool { return len(watching(c)) == 0 })
		}},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t) // launches take 30s
			e.group("web", 0, 5, 0, discoveredTags(nil))
			cfg := tc.cfg
			cfg.AutoDiscovery = discovery()
			ctx, stop := context.WithCancel(e.ctx)
			defer stop()
			c, told := e.watchedIn(ctx, cfg)
			g := groupByID(t, c, "web")
			if err := g.IncreaseSize(context.Background(), 1); err != nil {
				t.Fatal(err)
			}
			if len(watching(c)) != 1 {
				t.Fatal("the launch is not watched")
			}
			tc.end(e, c, g, stop)
			if got := watching(c); len(got) != 0 {
				t.Fatalf("still watching %v; log:\n%s", got, e.log.String())
			}
			c.watchers.Wait()
			before := len(activityReads(e.srv, "web"))
			for i := 0; i < 5; i++ {
				e.step(c, DefaultLaunchWatchInterval)
			}
			if n := len(activityReads(e.srv, "web")); n != before {
				t.Fatalf("%d reads after the watch ended", n-before)
			}
			if tc.log != "" && !strings.Contains(e.log.String(), tc.log) {
				t.Fatalf("log lacks %q:\n%s", tc.log, e.log.String())
			}
			if len(told) != 0 {
				t.Fatalf("told of %s", <-told)
			}
		})
	}

	t.Run("no one to tell", func(t *testing.T) {
		e := newEnv(t)
		e.group("web", 0, 5, 0, discoveredTags(nil))
		c := e.cloud(Config{AutoDiscovery: discovery()}, nil)
		if err := groupByID(t, c, "web").IncreaseSize(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		if got := watching(c); len(got) != 0 || e.clock.Waiters() != 1 {
			t.Fatalf("watching %v with %d clock waiters, without a registered notifier", got, e.clock.Waiters())
		}
	})
}
