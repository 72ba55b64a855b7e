// Package config holds tidal's command-line options: their names, defaults
// and validation. Flag names and defaults follow Cluster Autoscaler where the
// two offer the same thing.
package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/pflag"
)

// leaderElectionJitter is client-go's leaderElectionJitter: the
// renew deadline must exceed the retry period times this.
const leaderElectionJitter = 1.2

// Cloud provider names accepted by --cloud-provider.
const (
	CloudProviderLocal = "local"
	CloudProviderAWS   = "aws"
	// CloudProviderExternalGRPC is a server of Cluster Autoscaler's
	// externalgrpc protocol, named by --cloud-config.
	CloudProviderExternalGRPC = "externalgrpc"
)

// Shutdown. On SIGTERM the node loop finishes the iteration in progress,
// which NodeLoopIterationTimeout bounds; the pod loop's syncs in progress,
// undoing taints of removals under way, releasing the lease and closing the
// HTTP server take the rest of ShutdownTime. The pod's termination grace
// period must not be shorter (deploy/ gives 360 s).
const (
	NodeLoopIterationTimeout = 5 * time.Minute
	ShutdownTime             = NodeLoopIterationTimeout + time.Minute
)

// Options is every setting of the tidal binary.
type Options struct {
	Kubeconfig string
	// Kubernetes is the API server's address; it overrides the kubeconfig's.
	Kubernetes    string
	UserAgent     string
	Namespace     string
	Address       string
	KubeClientQPS float32
	KubeBurst     int
	// KubeAPIContentType is the content type of the requests of the
	// clients of built-in objects (--kube-api-content-type).
	KubeAPIContentType string
	// EmitPerNodeGroupMetrics adds CA's per node group gauges to /metrics.
	EmitPerNodeGroupMetrics bool

	LeaderElect   bool
	LeaseName     string
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration

	CloudProvider string
	// CloudConfig is the provider's configuration file (externalgrpc: the
	// server's address, TLS files and call timeout).
	CloudConfig     string
	LocalNodeGroups string
	NodeGroupFlags  []string
	// NodeGroups is NodeGroupFlags parsed by Validate.
	NodeGroups []NodeGroupSpec

	ScanInterval         time.Duration
	MaxNodeProvisionTime time.Duration
	MaxNodeStartupTime   time.Duration
	// MaxNodeLifetime is how old a node may get before it is replaced;
	// 0: no limit.
	MaxNodeLifetime time.Duration
	// ReplaceDriftedNodes replaces nodes that no longer match what their
	// group launches.
	ReplaceDriftedNodes bool
	MaxInactivity       time.Duration
	MaxFailingTime      time.Duration

	ScaleUp   ScaleUpOptions
	ScaleDown ScaleDownOptions
	// Consolidation are the replacement and disruption budget flags.
	Consolidation ConsolidationOptions
	Taints        TaintOptions

	// AWS holds the options of --cloud-provider=aws.
	AWS AWSOptions
	// HPA holds the pod loop's options.
	HPA HPAOptions
	// Coexist: beside Cluster Autoscaler.
	Coexist CoexistOptions
	// DryRun is shadow mode (--dry-run): decide, record, act on nothing.
	DryRun bool
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		Namespace:            "kube-system",
		UserAgent:            "tidal",
		Address:              ":8085",
		KubeClientQPS:        5,
		KubeAPIContentType:   ContentTypeProtobuf,
		KubeBurst:            10,
		LeaderElect:          true,
		LeaseName:            "tidal",
		LeaseDuration:        15 * time.Second,
		RenewDeadline:        10 * time.Second,
		RetryPeriod:          2 * time.Second,
		CloudProvider:        CloudProviderLocal,
		ScanInterval:         10 * time.Second,
		MaxNodeProvisionTime: 15 * time.Minute,
		MaxNodeStartupTime:   15 * time.Minute,
		MaxInactivity:        10 * time.Minute,
		MaxFailingTime:       15 * time.Minute,
		ScaleUp:              DefaultScaleUpOptions(),
		ScaleDown:            DefaultScaleDownOptions(),
		Consolidation:        DefaultConsolidationOptions(),
		Coexist:              DefaultCoexistOptions(),
	}
}

// AddFlags registers the options on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig file. Empty means in-cluster configuration.")
	fs.StringVar(&o.Kubernetes, "kubernetes", o.Kubernetes, "Address of the Kubernetes API server (https://host:port); overrides the kubeconfig's. Empty uses the kubeconfig or the in-cluster configuration.")
	fs.StringVar(&o.UserAgent, "user-agent", o.UserAgent, "User agent of tidal's API requests; tidal's version and platform follow it.")
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "Namespace tidal runs in: its lease, status and priority ConfigMaps live here.")
	fs.StringVar(&o.Address, "address", o.Address, "Address to serve /healthz and /metrics on.")
	fs.BoolVar(&o.EmitPerNodeGroupMetrics, "emit-per-nodegroup-metrics", o.EmitPerNodeGroupMetrics, "Add Cluster Autoscaler's per node group gauges (cluster_autoscaler_node_group_*) to /metrics.")
	fs.Float32Var(&o.KubeClientQPS, "kube-client-qps", o.KubeClientQPS, "Queries per second to the API server.")
	fs.IntVar(&o.KubeBurst, "kube-client-burst", o.KubeBurst, "Burst of queries to the API server.")
	fs.StringVar(&o.KubeAPIContentType, "kube-api-content-type", o.KubeAPIContentType, "Content type of the requests for built-in objects (nodes, pods, events, ...): "+ContentTypeProtobuf+" or "+ContentTypeJSON+". Custom resources and the metrics APIs always use "+ContentTypeJSON+".")

	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Run only while holding the leader Lease, so several replicas can run for availability.")
	fs.StringVar(&o.LeaseName, "leader-elect-resource-name", o.LeaseName, "Name of the leader-election Lease.")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "How long a non-leader waits before taking over an unrenewed lease.")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "How long the leader keeps trying to renew before giving up leadership.")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "How often to try to acquire or renew the lease.")

	fs.StringVar(&o.CloudProvider, "cloud-provider", o.CloudProvider, "Cloud provider, required by tidal: aws; externalgrpc (a server of Cluster Autoscaler's externalgrpc protocol, named by --cloud-config); or local (a simulated cloud that creates Node objects itself; only for a cluster whose nodes it created, such as tidal-local's). Cluster Autoscaler's other providers (gce, azure, clusterapi, ...): through externalgrpc and its example server, see docs/externalgrpc.md.")
	fs.StringVar(&o.CloudConfig, "cloud-config", o.CloudConfig, "The cloud provider's configuration file. --cloud-provider=externalgrpc: Cluster Autoscaler's YAML (address, cert, key, cacert, grpc_timeout); see docs/externalgrpc.md. Not used by the other providers.")
	fs.StringVar(&o.LocalNodeGroups, "local-node-groups", o.LocalNodeGroups, "YAML file describing the local cloud's node groups (local provider only). Empty uses three built-in pools in two zones.")
	fs.StringArrayVar(&o.NodeGroupFlags, "nodes", o.NodeGroupFlags, "A node group to manage, MIN:MAX:NAME. Repeat for several groups.")

	fs.DurationVar(&o.ScanInterval, "scan-interval", o.ScanInterval, "How often the node loop runs when nothing triggers it earlier.")
	fs.DurationVar(&o.MaxNodeProvisionTime, "max-node-provision-time", o.MaxNodeProvisionTime, "How long a requested node may take to register before the request is considered failed.")
	fs.DurationVar(&o.MaxNodeLifetime, "max-node-lifetime", o.MaxNodeLifetime, "Replace nodes older than this (new capacity Ready first, then drained, one node per node group at a time); 0 never. A node group's own value: the ASG tag k8s.io/cluster-autoscaler/node-template/autoscaling-options/maxnodelifetime.")
	fs.BoolVar(&o.ReplaceDriftedNodes, "replace-drifted-nodes", o.ReplaceDriftedNodes, "Replace nodes that no longer match what their node group launches (AWS: another launch template or version, an instance type the group no longer launches, another AMI): new capacity Ready first, then drained, one node per node group at a time.")
	fs.DurationVar(&o.MaxNodeStartupTime, "max-node-startup-time", o.MaxNodeStartupTime, "How long a registered node may take to become Ready: an unready node younger than this is starting, an older one counts as unready (--max-total-unready-percentage, --ok-total-unready-count).")
	fs.DurationVar(&o.MaxInactivity, "max-inactivity", o.MaxInactivity, "/healthz fails when the leader's node loop has not completed a run for this long.")
	fs.DurationVar(&o.MaxFailingTime, "max-failing-time", o.MaxFailingTime, "/healthz fails when the leader's node loop has not completed a run without an error for this long.")
	o.ScaleUp.AddFlags(fs)
	o.ScaleDown.AddFlags(fs)
	o.Consolidation.AddFlags(fs)
	o.Taints.AddFlags(fs)
	o.AWS.AddFlags(fs)
	o.HPA.AddFlags(fs)
	addAcceptedCAFlags(fs)
	o.Coexist.AddFlags(fs)
	o.addDryRunFlag(fs)
}

// Validate checks every option and fills the parsed fields. The error names
// the flag and the bad value.
func (o *Options) Validate() error {
	var errs []error
	specs, err := ParseNodeGroupSpecs(o.NodeGroupFlags)
	if err != nil {
		errs = append(errs, err)
	}
	o.NodeGroups = specs
	errs = append(errs, objectName("--namespace", o.Namespace, "namespace", true), validateAddress(o.Address), o.validateAPIServer())
	errs = append(errs, o.validateCloudProvider())
	if o.LocalNodeGroups != "" && o.CloudProvider != CloudProviderLocal {
		errs = append(errs, fmt.Errorf("--local-node-groups=%q is only valid with --cloud-provider=local", o.LocalNodeGroups))
	}
	errs = append(errs, positive("--scan-interval", o.ScanInterval), positive("--max-node-provision-time", o.MaxNodeProvisionTime),
		positive("--max-node-startup-time", o.MaxNodeStartupTime), nonNegative("--max-node-lifetime", o.MaxNodeLifetime),
		o.validateInactivity(), o.validateLeaderElection(), o.validateClient())
	errs = append(errs, o.ScaleUp.Validate(), o.ScaleDown.Validate(), o.Consolidation.Validate(), o.Taints.Validate(), o.AWS.Validate(o.CloudProvider), o.HPA.Validate(),
		o.Coexist.Validate())
	// After Coexist.Validate, which parses Cluster Autoscaler's Lease.
	errs = append(errs, o.applyDryRunNames())
	return errors.Join(errs...)
}

// validateCloudProvider checks --cloud-provider and --cloud-config.
func (o *Options) validateCloudProvider() error {
	switch o.CloudProvider {
	case CloudProviderLocal, CloudProviderAWS:
		if o.CloudConfig != "" {
			return fmt.Errorf("--cloud-config=%q is only used with --cloud-provider=%s", o.CloudConfig, CloudProviderExternalGRPC)
		}
	case CloudProviderExternalGRPC:
		if o.CloudConfig == "" {
			return fmt.Errorf("--cloud-provider=%s needs --cloud-config: a file with the server's address (and TLS files)", CloudProviderExternalGRPC)
		}
	case "":
		return errors.New("--cloud-provider is required: aws, externalgrpc, or local for a simulated cloud " +
			"(only for a cluster whose nodes it created; `tidal-local` starts a cluster with one)")
	default:
		if IsCAProvider(o.CloudProvider) {
			return externalGRPCRoute(o.CloudProvider)
		}
		return fmt.Errorf("--cloud-provider=%q: want %q, %q or %q; Cluster Autoscaler's other providers (gce, azure, "+
			"clusterapi, ...) through %q and its example server (docs/externalgrpc.md)",
			o.CloudProvider, CloudProviderAWS, CloudProviderExternalGRPC, CloudProviderLocal, CloudProviderExternalGRPC)
	}
	return nil
}

// validateInactivity keeps /healthz from failing between two runs of a
// healthy loop: the limit must exceed the time between them.
func (o *Options) validateInactivity() error {
	if err := errors.Join(positive("--max-inactivity", o.MaxInactivity), positive("--max-failing-time", o.MaxFailingTime)); err != nil {
		return err
	}
	if o.MaxFailingTime <= o.ScanInterval {
		return fmt.Errorf("--max-failing-time=%v must be longer than --scan-interval=%v, or /healthz fails between two healthy runs", o.MaxFailingTime, o.ScanInterval)
	}
	if o.MaxInactivity <= o.ScanInterval {
		return fmt.Errorf("--max-inactivity=%v must be longer than --scan-interval=%v, or /healthz fails between two healthy runs", o.MaxInactivity, o.ScanInterval)
	}
	if o.HPA.Enabled && o.MaxInactivity <= o.HPA.SyncPeriod {
		return fmt.Errorf("--max-inactivity=%v must be longer than --hpa-sync-period=%v, or /healthz fails between two healthy runs", o.MaxInactivity, o.HPA.SyncPeriod)
	}
	return nil
}

// validateLeaderElection checks the lease settings as client-go's leader
// election and the API server's Lease validation would, so that a bad value
// stops tidal at once instead of leaving it a standby for ever.
func (o *Options) validateLeaderElection() error {
	if !o.LeaderElect {
		return nil
	}
	errs := []error{objectName("--leader-elect-resource-name", o.LeaseName, "Lease", false),
		positive("--leader-elect-renew-deadline", o.RenewDeadline), positive("--leader-elect-retry-period", o.RetryPeriod)}
	// The Lease stores the duration in whole seconds, as an int32 above 0.
	if o.LeaseDuration < time.Second || o.LeaseDuration > math.MaxInt32*time.Second {
		errs = append(errs, fmt.Errorf("--leader-elect-lease-duration=%v must be between 1s and %v", o.LeaseDuration, math.MaxInt32*time.Second))
	}
	if o.RenewDeadline >= o.LeaseDuration {
		errs = append(errs, fmt.Errorf("--leader-elect-renew-deadline=%v must be shorter than --leader-elect-lease-duration=%v", o.RenewDeadline, o.LeaseDuration))
	}
	if o.RetryPeriod > 0 && float64(o.RenewDeadline) <= leaderElectionJitter*float64(o.RetryPeriod) {
		errs = append(errs, fmt.Errorf("--leader-elect-renew-deadline=%v must be longer than %v times --leader-elect-retry-period=%v",
			o.RenewDeadline, leaderElectionJitter, o.RetryPeriod))
	}
	return errors.Join(errs...)
}

// validateClient checks the API client's rate limits.
func (o *Options) validateClient() error {
	q := float64(o.KubeClientQPS)
	if math.IsNaN(q) || math.IsInf(q, 0) || q <= 0 {
		return fmt.Errorf("--kube-client-qps=%v must be a positive number", o.KubeClientQPS)
	}
	if o.KubeAPIContentType != ContentTypeProtobuf && o.KubeAPIContentType != ContentTypeJSON {
		return fmt.Errorf("--kube-api-content-type=%q: want %s or %s", o.KubeAPIContentType, ContentTypeProtobuf, ContentTypeJSON)
	}
	return atLeast("--kube-client-burst", o.KubeBurst, 1)
}

// The content types --kube-api-content-type takes.
const (
	ContentTypeProtobuf = "application/vnd.kubernetes.protobuf"
	ContentTypeJSON     = "application/json"
)

func validateAddress(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--address=%q: want HOST:PORT or :PORT: %v", addr, err)
	}
	if host != "" && net.ParseIP(host) == nil && host != "localhost" {
		return fmt.Errorf("--address=%q: %q is not an IP address", addr, host)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("--address=%q: %q is not a port number", addr, port)
	}
	return nil
}

// validateAPIServer checks --kubernetes and --user-agent.
func (o *Options) validateAPIServer() error {
	var errs []error
	if o.Kubernetes != "" {
		u, err := url.Parse(o.Kubernetes)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			errs = append(errs, fmt.Errorf("--kubernetes=%q: want the API server's URL, such as https://10.0.0.1:6443", o.Kubernetes))
		}
	}
	if strings.TrimSpace(o.UserAgent) == "" || strings.IndexFunc(o.UserAgent, unicode.IsControl) >= 0 {
		errs = append(errs, fmt.Errorf("--user-agent=%q must be non-empty printable text", o.UserAgent))
	}
	return errors.Join(errs...)
}
