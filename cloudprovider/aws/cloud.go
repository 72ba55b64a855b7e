// Package aws is tidal's AWS cloud provider: EC2 Auto Scaling Groups as node
// groups, through aws-sdk-go-v2, with Cluster Autoscaler's flags, tags and
// behaviour, so that a cluster set up for Cluster Autoscaler works unchanged.
//
// Groups come from --nodes=MIN:MAX:ASG_NAME or from tag-based auto-discovery
// (--node-group-auto-discovery=asg:tag=...). Their descriptions are cached
// and read again every refresh interval, sooner while a group is changing,
// and right after every change tidal makes. Growing a group sets its desired
// capacity; removing a node terminates its instance and decrements the
// desired capacity. Instances a group was asked for but has not launched are
// listed as placeholders, carrying the error of the group's last failed
// launch (a stock-out is an OutOfResources error) so the node loop can back
// the group off. While launches tidal asked for are in flight, the group's
// scaling activities are watched every couple of seconds, and the node
// loop is told of a failure at once (cloudprovider.InstanceErrorNotifier).
// Template nodes for scale from zero are built from
// DescribeInstanceTypes, the group's launch template, mixed instances policy
// or launch configuration, and Cluster Autoscaler's node-template tags.
package aws

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
)

// Reasons of the events the provider emits.
const (
	// EventReasonNodeGroupNotFound: an ASG named by --nodes does not exist.
	EventReasonNodeGroupNotFound = "NodeGroupNotFound"
)

// Config is what the provider manages and how.
type Config struct {
	// NodeGroups are the groups of --nodes; their min and max sizes are
	// kept within the ASG's own bounds.
	NodeGroups []cloudprovider.NodeGroupSpec
	// AutoDiscovery are the --node-group-auto-discovery tag sets; a group
	// matching any set is managed with the ASG's min and max sizes.
	AutoDiscovery []AutoDiscoverySpec
	// RefreshInterval is how long group descriptions are cached; default
	// DefaultRefreshInterval.
	RefreshInterval time.Duration
	// ConvergingRefreshInterval is the refresh interval while a group has
	// instances starting, stopping or missing (desired capacity not yet
	// met), so that launch failures are seen within a loop or two;
	// default the smaller of 10s and RefreshInterval.
	ConvergingRefreshInterval time.Duration
	// MaxStaleness is how old a group's description may be before the
	// provider refuses to change the group; default 2 × RefreshInterval.
	MaxStaleness time.Duration
	// MaxPods is the pods capacity of template nodes; 0 derives it from
	// the instance type's network interfaces.
	MaxPods int
	// NodeReservation is NodeReservationEKS (default) or
	// NodeReservationNone.
	NodeReservation string
	// Prices enables Pricing when not empty: on-demand prices by
	// instance type; groups that launch spot instances are priced from
	// EC2's spot price history.
	Prices PriceTable
	// SpotPriceTTL is how long a spot price read is used before it is
	// read again; default DefaultSpotPriceTTL.
	SpotPriceTTL time.Duration
	// LaunchTemplateTTL is how long $Latest and $Default launch template
	// versions, and SSM parameters of image ids, are cached; default 10m.
	LaunchTemplateTTL time.Duration
	// OperationTimeout bounds one AWS call, retries included; default 2m.
	OperationTimeout time.Duration
	// LaunchWatchInterval is how often the scaling activities of a group
	// with launches in flight are read, at most; default 2s.
	LaunchWatchInterval time.Duration
	// InterruptionQueue is the SQS queue of EventBridge events about
	// instances going away (--aws-interruption-queue); empty: none.
	InterruptionQueue string
	// LaunchWatchTimeout is how long launches are watched at most after
	// the last increase; default 15m (--max-node-provision-time), after
	// which the node loop gives up on them anyway.
	LaunchWatchTimeout time.Duration
	// CompareImages marks instances drifted whose AMI is not the one
	// their group launches now (--replace-drifted-nodes): it reads the
	// instances (ec2:DescribeInstances) and the SSM parameters of
	// resolve:ssm: image ids (ssm:GetParameter).
	CompareImages bool
}

// Validate checks a configuration built from flags; the errors name the
// flags.
func (c *Config) Validate() error {
	return c.validate()
}

func (c *Config) setDefaults() {
	if c.RefreshInterval <= 0 {
		c.RefreshInterval = DefaultRefreshInterval
	}
	if c.ConvergingRefreshInterval <= 0 {
		c.ConvergingRefreshInterval = min(10*time.Second, c.RefreshInterval)
	}
	if c.MaxStaleness <= 0 {
		c.MaxStaleness = 2 * c.RefreshInterval
	}
	if c.NodeReservation == "" {
		c.NodeReservation = NodeReservationEKS
	}
	if c.SpotPriceTTL <= 0 {
		c.SpotPriceTTL = DefaultSpotPriceTTL
	}
	if c.LaunchTemplateTTL <= 0 {
		c.LaunchTemplateTTL = 10 * time.Minute
	}
	if c.OperationTimeout <= 0 {
		c.OperationTimeout = 2 * time.Minute
	}
	if c.LaunchWatchInterval <= 0 {
		c.LaunchWatchInterval = DefaultLaunchWatchInterval
	}
	if c.LaunchWatchTimeout <= 0 {
		c.LaunchWatchTimeout = 15 * time.Minute
	}
}

func (c *Config) validate() error {
	switch {
	case len(c.NodeGroups) == 0 && len(c.AutoDiscovery) == 0:
		return errors.New("--cloud-provider=aws needs node groups: give --nodes=MIN:MAX:ASG_NAME or --node-group-auto-discovery=asg:tag=...")
	case len(c.NodeGroups) > 0 && len(c.AutoDiscovery) > 0:
		return fmt.Errorf("--node-group-auto-discovery=%s cannot be combined with --nodes=%s", c.AutoDiscovery[0], c.NodeGroups[0])
	case c.NodeReservation != "" && c.NodeReservation != NodeReservationEKS && c.NodeReservation != NodeReservationNone:
		return fmt.Errorf("--aws-node-reservation=%q: want %q or %q", c.NodeReservation, NodeReservationEKS, NodeReservationNone)
	case c.MaxPods < 0:
		return fmt.Errorf("--aws-max-pods=%d must not be negative", c.MaxPods)
	}
	return nil
}

// EventFunc records a Kubernetes event about the provider (eventType is
// corev1.EventTypeNormal or corev1.EventTypeWarning).
type EventFunc func(eventType, reason, message string)

// Cloud is the AWS cloud provider.
type Cloud struct {
	ctx    context.Context
	cfg    Config
	api    Clients
	clock  clock.WithTicker
	events EventFunc
	// queue is the interruption queue (nil: none).
	queue *Queue

	types instanceTypeCache
	lts   launchTemplateCache
	spot  spotPrices
	// params are the SSM parameters of resolve:ssm: image ids.
	params parameterCache
	// images are the AMIs of instances read, by instance id; guarded by
	// refreshMu.
	images map[string]string
	// imageErr is the last AMI read error reported ("" after a read
	// succeeded), to report each once; guarded by refreshMu.
	imageErr string
	// spotLogged is the last spot price error logged by instance type
	// ("" after a read succeeded), to log each once; guarded by mu.
	spotLogged map[string]string

	// refreshMu serialises refreshes.
	refreshMu sync.Mutex

	mu          sync.Mutex
	groups      map[string]*nodeGroup
	order       []string
	byInstance  map[string]string // instance id -> group name
	lastRefresh time.Time
	dirty       bool
	// changes counts the changes made, to tell whether one happened
	// during a refresh.
	changes int
	missing map[string]bool
	// noneFound is set while auto-discovery finds no group, to warn once.
	noneFound bool
	// seq numbers reads and resets of launch failures, to tell which of
	// two came later.
	seq uint64

	// notify is told of groups whose launches failed; nil until the node
	// loop registers, and no launch is watched while nil.
	notify func(group string)
	// watches are the groups whose launches in flight are watched.
	watches map[string]*launchWatch
	// closed is set by Cleanup: no more watches.
	closed bool
	// watchers counts the watches' goroutines.
	watchers sync.WaitGroup
}

var (
	_ cloudprovider.CloudProvider         = (*Cloud)(nil)
	_ cloudprovider.InstanceErrorNotifier = (*Cloud)(nil)
)

// Option configures a Cloud.
type Option func(*Cloud)

// WithClock replaces the real clock, for tests that drive time.
func WithClock(c clock.WithTicker) Option { return func(cl *Cloud) { cl.clock = c } }

// WithEvents sets where the provider's events go.
func WithEvents(f EventFunc) Option { return func(cl *Cloud) { cl.events = f } }

// New makes the provider and reads the groups once, so that bad
// credentials or a wrong region stop tidal at start with a clear error.
// ctx carries the logger and bounds nothing but this first read: calls
// made later are bounded by cfg.OperationTimeout and are not cancelled
// when ctx ends, so no request is left half made at shutdown. Only the
// watches of launches in flight, which just read, end with ctx.
func New(ctx context.Context, cfg Config, api Clients, opts ...Option) (*Cloud, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	c := &Cloud{
		ctx: ctx, cfg: cfg, api: api, clock: clock.RealClock{},
		events: func(string, string, string) {},
		groups: map[string]*nodeGroup{}, byInstance: map[string]string{}, missing: map[string]bool{},
		watches: map[string]*launchWatch{},
	}
	c.lts.ttl = cfg.LaunchTemplateTTL
	c.params.ttl = cfg.LaunchTemplateTTL
	c.spot.ttl = cfg.SpotPriceTTL
	c.spotLogged = map[string]string{}
	for _, o := range opts {
		o(c)
	}
	if err := c.refresh(ctx); err != nil {
		return nil, err
	}
	if cfg.InterruptionQueue != "" {
		q, err := NewQueue(ctx, api.SQS, cfg.InterruptionQueue)
		if err != nil {
			return nil, err
		}
		c.queue = q
	}
	return c, nil
}

// Interruptions is the interruption queue, nil without one
// (cloudprovider.InterruptionNotifier).
func (c *Cloud) Interruptions() cloudprovider.InterruptionSource {
	if c.queue == nil {
		return nil
	}
	return c.queue
}

// opContext is the context of one AWS call: the caller's (the node loop's
// iteration, whose deadline ends a call that hangs), bounded by the
// operation timeout.
func (c *Cloud) opContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.cfg.OperationTimeout)
}

func (c *Cloud) logger() klog.Logger { return klog.FromContext(c.ctx).WithName("aws") }

// Name implements cloudprovider.CloudProvider.
func (c *Cloud) Name() string { return ProviderName }

// NodeGroups returns the groups found by the last refresh, sorted by name.
// A group named by --nodes that does not exist is left out (and reported
// by a log line and an event) until it appears.
func (c *Cloud) NodeGroups() []cloudprovider.NodeGroup {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]cloudprovider.NodeGroup, 0, len(c.order))
	for _, name := range c.order {
		out = append(out, c.groups[name])
	}
	return out
}

// NodeGroupForNode returns the group of the node's instance. Nodes that are
// not EC2 instances (no providerID, another cloud's, Fargate) and instances
// of groups tidal does not manage give nil and no error; an aws:// providerID
// that is malformed is an error.
func (c *Cloud) NodeGroupForNode(node *corev1.Node) (cloudprovider.NodeGroup, error) {
	id := node.Spec.ProviderID
	if !strings.HasPrefix(id, "aws://") {
		return nil, nil
	}
	_, instanceID, err := ParseProviderID(id)
	if err != nil {
		if strings.Count(strings.TrimPrefix(id, ProviderIDPrefix), "/") > 1 {
			return nil, nil // Fargate and other non-EC2 AWS nodes
		}
		return nil, fmt.Errorf("node %s: %w", node.Name, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	name, ok := c.byInstance[instanceID]
	if !ok {
		if asg, _, isPlaceholder := parsePlaceholder(instanceID); isPlaceholder {
			name, ok = asg, true
		}
	}
	if g := c.groups[name]; ok && g != nil {
		return g, nil
	}
	return nil, nil
}

// Pricing returns prices from --aws-price-table, or ErrNotImplemented
// without one.
func (c *Cloud) Pricing() (cloudprovider.PricingModel, error) {
	if len(c.cfg.Prices) == 0 {
		return nil, cloudprovider.ErrNotImplemented
	}
	return pricing{cloud: c}, nil
}

// GPULabel is the label Cluster Autoscaler's AWS provider uses for GPU
// nodes; set it on GPU groups with a node-template label tag.
func (c *Cloud) GPULabel() string { return GPULabel }

// Cleanup implements cloudprovider.CloudProvider: it stops the watches of
// launches in flight and waits for them to end.
func (c *Cloud) Cleanup() error {
	c.mu.Lock()
	c.closed = true
	c.stopWatchesLocked()
	c.mu.Unlock()
	c.watchers.Wait()
	return nil
}

// Refresh reads the groups again when the cache is older than the refresh
// interval (the converging interval while a group is changing) or a change
// was made since the last read. Otherwise it returns at once, without any
// AWS call.
func (c *Cloud) Refresh(ctx context.Context) error {
	c.mu.Lock()
	due := c.refreshDueLocked(c.clock.Now())
	c.mu.Unlock()
	if !due {
		return nil
	}
	ctx, cancel := c.opContext(ctx)
	defer cancel()
	return c.refresh(ctx)
}

func (c *Cloud) refreshDueLocked(now time.Time) bool {
	if c.dirty || c.lastRefresh.IsZero() {
		return true
	}
	age := now.Sub(c.lastRefresh)
	if age >= c.cfg.RefreshInterval {
		return true
	}
	if age >= c.cfg.ConvergingRefreshInterval {
		for _, g := range c.groups {
			if g.st.convergingLocked() {
				return true
			}
		}
	}
	return false
}

// nextSeqLocked returns a new sequence number, greater than every one
// before.
func (c *Cloud) nextSeqLocked() uint64 {
	c.seq++
	return c.seq
}

// markDirty makes the next Refresh read the groups again.
func (c *Cloud) markDirty() {
	c.mu.Lock()
	c.dirty = true
	c.changes++
	c.mu.Unlock()
}

// balancingIgnoredLabels are labels EKS and eksctl give each node group's
// nodes, and zone ids: they differ between groups alike.
var balancingIgnoredLabels = []string{
	"alpha.eksctl.io/nodegroup-name", "eks.amazonaws.com/nodegroup", "k8s.amazonaws.com/eniConfig",
	"topology.ebs.csi.aws.com/zone", "topology.k8s.aws/zone-id",
}

// BalancingIgnoredLabels implements cloudprovider.BalancingLabelIgnorer.
func (c *Cloud) BalancingIgnoredLabels() []string {
	return append([]string(nil), balancingIgnoredLabels...)
}

var _ cloudprovider.BalancingLabelIgnorer = (*Cloud)(nil)
