package config

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/spf13/pflag"
)

// Defaults of the AWS flags.
const (
	// DefaultAWSRefreshInterval is how long the Auto Scaling Group
	// descriptions are cached, as in Cluster Autoscaler.
	DefaultAWSRefreshInterval = time.Minute
	// AWSNodeReservationEKS subtracts what the EKS AMIs reserve for the
	// kubelet, the system and eviction from a template node's capacity.
	AWSNodeReservationEKS = "eks"
	// AWSNodeReservationNone makes a template node's allocatable equal its
	// capacity, as Cluster Autoscaler does.
	AWSNodeReservationNone = "none"
)

// Flag names of --cloud-provider=aws.
const (
	flagAWSRegion          = "aws-region"
	flagAutoDiscovery      = "node-group-auto-discovery"
	flagAWSRefresh         = "aws-refresh-interval"
	flagAWSMaxPods         = "aws-max-pods"
	flagAWSPriceTable      = "aws-price-table"
	flagAWSNodeReservation = "aws-node-reservation"
	flagAWSInterruptions   = "aws-interruption-queue"
)

// AWSOptions are the flags of --cloud-provider=aws.
type AWSOptions struct {
	// Region is the AWS region; empty takes it from the SDK's chain
	// (AWS_REGION, the shared config file, the instance metadata).
	Region string
	// NodeGroupAutoDiscoveryFlags are the --node-group-auto-discovery values.
	NodeGroupAutoDiscoveryFlags []string
	// NodeGroupAutoDiscovery is NodeGroupAutoDiscoveryFlags parsed by
	// Validate.
	NodeGroupAutoDiscovery []ASGAutoDiscoverySpec
	// RefreshInterval is how long Auto Scaling Group descriptions are
	// cached between node-loop iterations.
	RefreshInterval time.Duration
	// MaxPods is the pods capacity of template nodes; 0 computes it from
	// the instance type's network interface limits, as the EKS AMIs do.
	MaxPods int
	// PriceTable is a file of hourly prices per instance type for the
	// price expander; empty means no pricing.
	PriceTable string
	// NodeReservation is how template allocatable is derived from
	// capacity: "eks" or "none".
	NodeReservation string
	// InterruptionQueue is the SQS queue of EventBridge events about
	// instances going away on their own; empty: none.
	InterruptionQueue string

	// fs is the flag set the options were registered on, to tell a flag
	// that was given from one left at its default.
	fs *pflag.FlagSet
}

// ASGTagFilter is one tag an auto-discovered group must carry: the key
// alone, or the key with this exact value.
type ASGTagFilter struct {
	Key   string
	Value string
}

func (f ASGTagFilter) String() string {
	if f.Value == "" {
		return f.Key
	}
	return f.Key + "=" + f.Value
}

// ASGAutoDiscoverySpec is one --node-group-auto-discovery value: an Auto
// Scaling Group is managed when it carries every tag.
type ASGAutoDiscoverySpec struct {
	Tags []ASGTagFilter
}

func (s ASGAutoDiscoverySpec) String() string {
	parts := make([]string, len(s.Tags))
	for i, t := range s.Tags {
		parts[i] = t.String()
	}
	return "asg:tag=" + strings.Join(parts, ",")
}

const autoDiscoveryExample = "asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/<cluster-name>"

// ParseASGAutoDiscoverySpec parses asg:tag=KEY[=VALUE],KEY[=VALUE]... as
// Cluster Autoscaler does. The error names the flag and the value.
func ParseASGAutoDiscoverySpec(value string) (ASGAutoDiscoverySpec, error) {
	bad := func(format string, args ...any) (ASGAutoDiscoverySpec, error) {
		return ASGAutoDiscoverySpec{}, fmt.Errorf("--%s=%q: %s", flagAutoDiscovery, value, fmt.Sprintf(format, args...))
	}
	discoverer, param, found := strings.Cut(value, ":")
	if !found {
		return bad("want asg:tag=KEY[=VALUE],..., for example %s", autoDiscoveryExample)
	}
	if discoverer != "asg" {
		return bad("discoverer %q is not supported: --cloud-provider=aws discovers Auto Scaling Groups with asg:tag=...", discoverer)
	}
	key, tags, found := strings.Cut(param, "=")
	if !found || key != "tag" {
		return bad("want asg:tag=KEY[=VALUE],... (the only parameter of asg is tag), for example %s", autoDiscoveryExample)
	}
	if strings.TrimSpace(tags) == "" {
		return bad("no tag given after asg:tag=")
	}
	var spec ASGAutoDiscoverySpec
	seen := map[string]bool{}
	for _, t := range strings.Split(tags, ",") {
		k, v, _ := strings.Cut(t, "=")
		switch {
		case k == "":
			return bad("empty tag key in %q", tags)
		case strings.TrimSpace(k) != k:
			return bad("tag key %q has leading or trailing white space", k)
		case strings.IndexFunc(t, unicode.IsControl) >= 0:
			return bad("tag %q contains a control character", t)
		case len(k) > 128:
			return bad("tag key %q is longer than the 128 characters AWS allows", k)
		case seen[k]:
			return bad("tag key %q is given twice", k)
		}
		seen[k] = true
		spec.Tags = append(spec.Tags, ASGTagFilter{Key: k, Value: v})
	}
	return spec, nil
}

// AddFlags registers the AWS flags.
func (o *AWSOptions) AddFlags(fs *pflag.FlagSet) {
	o.fs = fs
	if o.RefreshInterval == 0 {
		o.RefreshInterval = DefaultAWSRefreshInterval
	}
	if o.NodeReservation == "" {
		o.NodeReservation = AWSNodeReservationEKS
	}
	fs.StringVar(&o.Region, flagAWSRegion, o.Region, "AWS region of the Auto Scaling Groups (aws provider only). Empty takes it from AWS_REGION, the shared config file or the instance metadata.")
	fs.StringArrayVar(&o.NodeGroupAutoDiscoveryFlags, flagAutoDiscovery, o.NodeGroupAutoDiscoveryFlags,
		"Manage every Auto Scaling Group carrying all the given tags, with the group's own min and max sizes: "+autoDiscoveryExample+
			" (a tag may be KEY=VALUE). Repeat for several sets of tags. Not together with --nodes (aws provider only).")
	fs.DurationVar(&o.RefreshInterval, flagAWSRefresh, o.RefreshInterval, "How long Auto Scaling Group descriptions are cached; they are also re-read after every change tidal makes (aws provider only).")
	fs.IntVar(&o.MaxPods, flagAWSMaxPods, o.MaxPods, "Pods capacity of template nodes (scale from zero). 0 computes it from the instance type's network interface limits as the EKS AMIs do (aws provider only).")
	fs.StringVar(&o.PriceTable, flagAWSPriceTable, o.PriceTable, "YAML or JSON file mapping instance types to hourly prices (m5.large: 0.096), for the price expander (aws provider only).")
	fs.StringVar(&o.InterruptionQueue, flagAWSInterruptions, o.InterruptionQueue, "Name of an SQS queue EventBridge sends EC2 spot interruption warnings, rebalance recommendations, instance state changes and AWS Health scheduled changes to: their nodes are cordoned at once, replaced and drained before the instance goes (aws provider only).")
	fs.StringVar(&o.NodeReservation, flagAWSNodeReservation, o.NodeReservation, "How template nodes' allocatable is derived from capacity: eks (subtract the EKS AMI's kube-reserved and eviction threshold) or none (allocatable = capacity, as Cluster Autoscaler) (aws provider only).")
}

// Validate checks the AWS flags and fills NodeGroupAutoDiscovery;
// cloudProvider is the chosen provider. With another provider it only
// reports AWS flags that were given.
func (o *AWSOptions) Validate(cloudProvider string) error {
	o.NodeGroupAutoDiscovery = nil
	if cloudProvider != CloudProviderAWS {
		var errs []error
		for _, name := range o.givenFlags() {
			errs = append(errs, fmt.Errorf("--%s=%s is only valid with --cloud-provider=aws", name, o.flagValue(name)))
		}
		return errors.Join(errs...)
	}
	if o.RefreshInterval == 0 && !o.changed(flagAWSRefresh) {
		o.RefreshInterval = DefaultAWSRefreshInterval
	}
	if o.NodeReservation == "" && !o.changed(flagAWSNodeReservation) {
		o.NodeReservation = AWSNodeReservationEKS
	}
	var errs []error
	for _, v := range o.NodeGroupAutoDiscoveryFlags {
		spec, err := ParseASGAutoDiscoverySpec(v)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		o.NodeGroupAutoDiscovery = append(o.NodeGroupAutoDiscovery, spec)
	}
	if o.Region != "" && !validRegion(o.Region) {
		errs = append(errs, fmt.Errorf("--%s=%q is not an AWS region name such as us-east-1: the SDK takes a host label "+
			"(letters, digits and '-', not at either end, at most 63)", flagAWSRegion, o.Region))
	}
	if o.RefreshInterval <= 0 {
		errs = append(errs, fmt.Errorf("--%s=%v must be positive", flagAWSRefresh, o.RefreshInterval))
	}
	if o.MaxPods < 0 {
		errs = append(errs, fmt.Errorf("--%s=%d must not be negative (0 computes it from the instance type)", flagAWSMaxPods, o.MaxPods))
	}
	if q := o.InterruptionQueue; q != "" && !validQueueName(q) {
		errs = append(errs, fmt.Errorf("--%s=%q is not an SQS queue name: 1 to 80 letters, digits, '-' or '_' (a FIFO queue's name ends in .fifo)", flagAWSInterruptions, q))
	}
	if o.NodeReservation != AWSNodeReservationEKS && o.NodeReservation != AWSNodeReservationNone {
		errs = append(errs, fmt.Errorf("--%s=%q: want %q or %q", flagAWSNodeReservation, o.NodeReservation, AWSNodeReservationEKS, AWSNodeReservationNone))
	}
	if nodes := o.nodesFlag(); o.fs != nil {
		switch {
		case len(nodes) > 0 && len(o.NodeGroupAutoDiscoveryFlags) > 0:
			errs = append(errs, fmt.Errorf("--%s=%q cannot be combined with --nodes=%q: use one or the other, as with Cluster Autoscaler",
				flagAutoDiscovery, o.NodeGroupAutoDiscoveryFlags[0], nodes[0]))
		case len(nodes) == 0 && len(o.NodeGroupAutoDiscoveryFlags) == 0:
			errs = append(errs, fmt.Errorf("--cloud-provider=aws needs node groups: give --nodes=MIN:MAX:ASG_NAME or --%s=%s", flagAutoDiscovery, autoDiscoveryExample))
		}
	}
	return errors.Join(errs...)
}

// changed reports whether flag name was given on the command line.
func (o *AWSOptions) changed(name string) bool {
	if o.fs == nil {
		return false
	}
	f := o.fs.Lookup(name)
	return f != nil && f.Changed
}

// givenFlags lists the AWS flags that were given, or, for options not
// parsed from flags, that differ from their defaults.
func (o *AWSOptions) givenFlags() []string {
	all := []string{flagAWSRegion, flagAutoDiscovery, flagAWSRefresh, flagAWSMaxPods, flagAWSPriceTable, flagAWSNodeReservation, flagAWSInterruptions}
	var out []string
	if o.fs != nil {
		for _, name := range all {
			if o.changed(name) {
				out = append(out, name)
			}
		}
		return out
	}
	nonDefault := map[string]bool{
		flagAWSRegion:          o.Region != "",
		flagAutoDiscovery:      len(o.NodeGroupAutoDiscoveryFlags) > 0,
		flagAWSRefresh:         o.RefreshInterval != 0 && o.RefreshInterval != DefaultAWSRefreshInterval,
		flagAWSMaxPods:         o.MaxPods != 0,
		flagAWSPriceTable:      o.PriceTable != "",
		flagAWSNodeReservation: o.NodeReservation != "" && o.NodeReservation != AWSNodeReservationEKS,
		flagAWSInterruptions:   o.InterruptionQueue != "",
	}
	for _, name := range all {
		if nonDefault[name] {
			out = append(out, name)
		}
	}
	return out
}

func (o *AWSOptions) flagValue(name string) string {
	switch name {
	case flagAWSRegion:
		return fmt.Sprintf("%q", o.Region)
	case flagAutoDiscovery:
		return fmt.Sprintf("%q", strings.Join(o.NodeGroupAutoDiscoveryFlags, " "))
	case flagAWSRefresh:
		return o.RefreshInterval.String()
	case flagAWSMaxPods:
		return fmt.Sprint(o.MaxPods)
	case flagAWSPriceTable:
		return fmt.Sprintf("%q", o.PriceTable)
	case flagAWSNodeReservation:
		return fmt.Sprintf("%q", o.NodeReservation)
	case flagAWSInterruptions:
		return fmt.Sprintf("%q", o.InterruptionQueue)
	}
	return ""
}

// nodesFlag is the --nodes values registered beside the AWS flags, when
// the options were parsed from a flag set.
func (o *AWSOptions) nodesFlag() []string {
	if o.fs == nil {
		return nil
	}
	f := o.fs.Lookup("nodes")
	if f == nil || !f.Changed {
		return nil
	}
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		return sv.GetSlice()
	}
	return []string{f.Value.String()}
}

// validRegion checks a region as aws-sdk-go-v2's endpoint resolvers do (a
// host label, not starting or ending with '-'), so that every region the
// SDK reaches through AWS_REGION, such as eusc-de-east-1, is accepted too.
func validRegion(region string) bool {
	return smithyhttp.ValidHostLabel(region) && !strings.HasPrefix(region, "-") && !strings.HasSuffix(region, "-")
}

// validQueueName is SQS's rule for queue names: 1 to 80 alphanumerics,
// hyphens and underscores; a FIFO queue's ends in .fifo.
func validQueueName(name string) bool {
	base := strings.TrimSuffix(name, ".fifo")
	if base == "" || len(name) > 80 {
		return false
	}
	for _, r := range base {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
