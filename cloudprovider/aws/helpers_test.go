package aws

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/aws/awstest"
)

const (
	testCluster   = "test-cluster"
	enabledTag    = "k8s.io/cluster-autoscaler/enabled"
	clusterTagKey = "k8s.io/cluster-autoscaler/" + testCluster
)

// env is an emulator, a fake clock both sides share, and a captured log.
type env struct {
	t     *testing.T
	srv   *awstest.Server
	clock *clocktesting.FakeClock
	ltID  string
	log   *syncBuffer
	ctx   context.Context
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newEnv starts an emulator with a fake clock, a launch template for
// m5.xlarge (80 GiB root volume), and the given options.
func newEnv(t *testing.T, opts ...awstest.Option) *env {
	t.Helper()
	fc := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	all := append([]awstest.Option{awstest.WithClock(fc), awstest.WithLaunchDelay(30 * time.Second),
		awstest.WithTerminateDelay(10 * time.Second), awstest.WithLaunchRetry(20 * time.Second)}, opts...)
	srv := awstest.New(all...)
	t.Cleanup(srv.Close)
	e := &env{t: t, srv: srv, clock: fc, log: &syncBuffer{}}
	e.ltID = srv.AddLaunchTemplate(awstest.LaunchTemplate{Name: "workers", Versions: []awstest.LaunchTemplateData{
		{InstanceType: "m5.xlarge", ImageID: "ami-0123456789abcdef0", RootVolumeGiB: 80},
	}})
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(e.log), textlogger.Verbosity(6)))
	e.ctx = klog.NewContext(context.Background(), logger)
	return e
}

// group adds an ASG using the launch template; desired instances are
// launched and put in service at once.
func (e *env) group(name string, min, max, desired int, tags map[string]string) {
	e.t.Helper()
	spec := awstest.GroupSpec{Name: name, MinSize: min, MaxSize: max, DesiredCapacity: desired,
		AvailabilityZones: []string{"us-east-1b", "us-east-1a"}, Subnets: []string{"subnet-b", "subnet-a"},
		LaunchTemplate: &awstest.LaunchTemplateRef{ID: e.ltID, Version: "$Latest"}, Tags: tags}
	if err := e.srv.AddGroup(spec); err != nil {
		e.t.Fatal(err)
	}
	e.settle()
}

// settle lets the emulator launch and finish what is due.
func (e *env) settle() {
	e.srv.Reconcile()
	e.clock.Step(time.Minute)
	e.srv.Reconcile()
}

func discoveredTags(extra map[string]string) map[string]string {
	tags := map[string]string{enabledTag: "true", clusterTagKey: "owned"}
	for k, v := range extra {
		tags[k] = v
	}
	return tags
}

func (e *env) clients(mods ...func(*ClientOptions)) Clients {
	e.t.Helper()
	akid, secret := e.srv.Credentials()
	o := ClientOptions{
		Region: e.srv.Region(), Endpoint: e.srv.URL(), MaxBackoff: 20 * time.Millisecond,
		LoadOptions: []func(*awsconfig.LoadOptions) error{
			awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(akid, secret, "")),
		},
	}
	for _, m := range mods {
		m(&o)
	}
	c, err := NewClients(e.ctx, o)
	if err != nil {
		e.t.Fatalf("clients: %v", err)
	}
	return c
}

type recordedEvent struct{ typ, reason, message string }

type eventLog struct {
	mu     sync.Mutex
	events []recordedEvent
}

func (l *eventLog) record(typ, reason, message string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, recordedEvent{typ, reason, message})
}

func (l *eventLog) all() []recordedEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]recordedEvent(nil), l.events...)
}

// cloud makes a provider against the emulator.
func (e *env) cloud(cfg Config, events *eventLog) *Cloud {
	e.t.Helper()
	c, err := e.newCloud(cfg, events)
	if err != nil {
		e.t.Fatalf("new cloud: %v", err)
	}
	return c
}

func (e *env) newCloud(cfg Config, events *eventLog) (*Cloud, error) {
	opts := []Option{WithClock(e.clock)}
	if events != nil {
		opts = append(opts, WithEvents(events.record))
	}
	return New(e.ctx, cfg, e.clients(), opts...)
}

func discovery() []AutoDiscoverySpec {
	return []AutoDiscoverySpec{{Tags: []TagFilter{{Key: enabledTag}, {Key: clusterTagKey}}}}
}

func groupByID(t *testing.T, c *Cloud, id string) cloudprovider.NodeGroup {
	t.Helper()
	for _, g := range c.NodeGroups() {
		if g.Id() == id {
			return g
		}
	}
	t.Fatalf("no node group %s among %v", id, ids(c))
	return nil
}

func ids(c *Cloud) []string {
	var out []string
	for _, g := range c.NodeGroups() {
		out = append(out, g.Id())
	}
	return out
}

func nodeFor(in awstest.Instance) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: in.PrivateDNSName}, Spec: corev1.NodeSpec{ProviderID: in.ProviderID()}}
}

func mustGroup(t *testing.T, srv *awstest.Server, name string) awstest.Group {
	t.Helper()
	g, ok := srv.Group(name)
	if !ok {
		t.Fatalf("emulator has no group %s", name)
	}
	return g
}

func countStates(instances []cloudprovider.Instance) map[cloudprovider.InstanceState]int {
	out := map[cloudprovider.InstanceState]int{}
	for _, in := range instances {
		out[in.Status.State]++
	}
	return out
}
