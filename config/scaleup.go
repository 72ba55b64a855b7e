package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tidal-autoscaler/tidal/core/scaleup"
	"github.com/tidal-autoscaler/tidal/expander"
)

// ScaleUpOptions are the flags of the scale-up decision and the cluster
// state, named as in Cluster Autoscaler.
type ScaleUpOptions struct {
	Expander                     string
	MaxNodesTotal                int
	CoresTotal                   string
	MemoryTotal                  string
	MaxNodesPerScaleUp           int
	MaxBinpackingTime            time.Duration
	MaxNodeGroupBinpackingTime   time.Duration
	BalanceSimilarNodeGroups     bool
	BalancingIgnoreLabels        []string
	BalancingLabels              []string
	ExpendablePodsPriorityCutoff int
	NewPodScaleUpDelay           time.Duration
	ProvisionAhead               bool
	NominatePlannedPods          bool
	MaxBulkNominations           int
	ScaleUpPlacement             string
	EnforceNodeGroupMinSize      bool
	MaxTotalUnreadyPercentage    float64
	OkTotalUnreadyCount          int
	InitialBackoff               time.Duration
	MaxBackoff                   time.Duration
	BackoffReset                 time.Duration
	WriteStatusConfigMap         bool
	StatusConfigMapName          string
	RecordDuplicatedEvents       bool
	NodeInfoCacheExpireTime      time.Duration

	// Parsed by Validate.
	MinCores, MaxCores         int64
	MinMemoryGiB, MaxMemoryGiB int64
}

// DefaultScaleUpOptions are Cluster Autoscaler's defaults, except the
// binpacking budget: tidal bounds a whole decision to 10s so a huge backlog
// never stalls the loop.
func DefaultScaleUpOptions() ScaleUpOptions {
	return ScaleUpOptions{
		Expander: "least-waste", CoresTotal: "0:320000", MemoryTotal: "0:6400000", MaxNodesPerScaleUp: 1000,
		MaxBinpackingTime: 10 * time.Second, MaxNodeGroupBinpackingTime: 10 * time.Second, ExpendablePodsPriorityCutoff: -10, ProvisionAhead: true,
		NominatePlannedPods: true, MaxBulkNominations: 50, ScaleUpPlacement: string(scaleup.PlacementPlan),
		MaxTotalUnreadyPercentage: 45, OkTotalUnreadyCount: 3,
		InitialBackoff: 5 * time.Minute, MaxBackoff: 30 * time.Minute, BackoffReset: 3 * time.Hour,
		WriteStatusConfigMap: true, StatusConfigMapName: "tidal-status",
	}
}

// AddFlags registers the scale-up flags.
func (o *ScaleUpOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Expander, "expander", o.Expander, "Which node group to grow: random, most-pods, least-waste, priority, topology-balance, priority-ratio, price, or a comma-separated chain such as priority,least-waste (random breaks the last tie).")
	fs.IntVar(&o.MaxNodesTotal, "max-nodes-total", o.MaxNodesTotal, "Most nodes the cluster may have; 0 means no limit.")
	fs.StringVar(&o.CoresTotal, "cores-total", o.CoresTotal, "MIN:MAX cores of the whole cluster.")
	fs.StringVar(&o.MemoryTotal, "memory-total", o.MemoryTotal, "MIN:MAX GiB of memory of the whole cluster.")
	fs.IntVar(&o.MaxNodesPerScaleUp, "max-nodes-per-scaleup", o.MaxNodesPerScaleUp, "Most nodes one scale-up decision adds.")
	fs.DurationVar(&o.MaxBinpackingTime, "max-binpacking-time", o.MaxBinpackingTime, "Time budget of one scale-up decision; what is left is decided in the next iteration.")
	fs.DurationVar(&o.MaxNodeGroupBinpackingTime, "max-nodegroup-binpacking-duration", o.MaxNodeGroupBinpackingTime, "Time budget of one node group's estimate within a scale-up decision (which --max-binpacking-time bounds as a whole).")
	fs.BoolVar(&o.BalanceSimilarNodeGroups, "balance-similar-node-groups", o.BalanceSimilarNodeGroups, "Split scale-ups across node groups alike but for zone, keeping their sizes even.")
	fs.StringArrayVar(&o.BalancingIgnoreLabels, "balancing-ignore-label", o.BalancingIgnoreLabels, "A node label to ignore when comparing node groups for balancing; repeat for several.")
	fs.StringArrayVar(&o.BalancingLabels, "balancing-label", o.BalancingLabels, "A node label that alone decides which node groups are similar for balancing: groups whose nodes carry each given label with equal values. Repeat for several; replaces every other comparison, so not together with --balancing-ignore-label.")
	fs.IntVar(&o.ExpendablePodsPriorityCutoff, "expendable-pods-priority-cutoff", o.ExpendablePodsPriorityCutoff, "Pods with a priority below this never trigger a scale-up.")
	fs.DurationVar(&o.NewPodScaleUpDelay, "new-pod-scale-up-delay", o.NewPodScaleUpDelay, "Pods younger than this do not trigger a scale-up yet.")
	fs.BoolVar(&o.ProvisionAhead, "provision-ahead", o.ProvisionAhead, "When the pod loop raises a workload's replicas, plan nodes for the new pods at once, before they exist.")
	fs.BoolVar(&o.NominatePlannedPods, "nominate-planned-pods", o.NominatePlannedPods, "When a node a scale-up planned for pending pods can take them (Ready, no startup taint), set their status.nominatedNodeName to it, so that the scheduler places them as planned (Kubernetes 1.35+, NominatedNodeNameForExpectation); off on older API servers.")
	fs.IntVar(&o.MaxBulkNominations, "max-bulk-nominations", o.MaxBulkNominations, "Most status.nominatedNodeName writes (set or cleared) in one iteration; the rest wait for the next ones.")
	fs.StringVar(&o.ScaleUpPlacement, "scale-up-placement", o.ScaleUpPlacement, "Which node count a scale-up asks for: plan (the plan's packing, which the scheduler follows through --nominate-planned-pods) or scheduler (the nodes on which the scheduler's default scoring, placing the pods itself, finds room for every one: for clusters that do not follow nominations). Both are logged.")
	fs.BoolVar(&o.EnforceNodeGroupMinSize, "enforce-node-group-min-size", o.EnforceNodeGroupMinSize, "Grow node groups whose target size is below their minimum (the cloud's, or a scheduled one) to it, with no pending pod asking.")
	fs.Float64Var(&o.MaxTotalUnreadyPercentage, "max-total-unready-percentage", o.MaxTotalUnreadyPercentage, "Percentage of unready nodes above which tidal stops scaling.")
	fs.IntVar(&o.OkTotalUnreadyCount, "ok-total-unready-count", o.OkTotalUnreadyCount, "Unready nodes always tolerated, whatever the percentage.")
	fs.DurationVar(&o.InitialBackoff, "initial-node-group-backoff-duration", o.InitialBackoff, "How long a node group whose scale-up failed is skipped, the first time.")
	fs.DurationVar(&o.MaxBackoff, "max-node-group-backoff-duration", o.MaxBackoff, "Longest backoff after repeated failures.")
	fs.DurationVar(&o.NodeInfoCacheExpireTime, "node-info-cache-expire-time", 87600*time.Hour, "How long a node group's template made from one of its nodes serves after the group last had a Ready node (the group scaled to zero); then the template comes from the cloud provider.")
	fs.DurationVar(&o.BackoffReset, "node-group-backoff-reset-timeout", o.BackoffReset, "Quiet time after which a node group's backoff starts again from the initial duration.")
	fs.BoolVar(&o.WriteStatusConfigMap, "write-status-configmap", o.WriteStatusConfigMap, "Write the status ConfigMap every iteration.")
	fs.StringVar(&o.StatusConfigMapName, "status-config-map-name", o.StatusConfigMapName, "Name of the status ConfigMap in --namespace.")
	fs.BoolVar(&o.RecordDuplicatedEvents, "record-duplicated-events", o.RecordDuplicatedEvents, "Record identical events on the same object more than once per 5 minutes.")
}

// Upper bounds of --cores-total and --memory-total: the node loop counts
// millicores and bytes in int64, so larger values would wrap around.
const (
	maxCoresTotal     = math.MaxInt64 / 1000
	maxMemoryTotalGiB = math.MaxInt64 >> 30
)

// Validate checks the scale-up flags and parses the totals.
func (o *ScaleUpOptions) Validate() error {
	var errs []error
	if _, err := expander.ParseChain(o.Expander); err != nil {
		errs = append(errs, err)
	}
	if _, err := scaleup.ParsePlacement(o.ScaleUpPlacement); err != nil {
		errs = append(errs, err)
	}
	var err error
	if o.MinCores, o.MaxCores, err = parseMinMax("--cores-total", o.CoresTotal, maxCoresTotal); err != nil {
		errs = append(errs, err)
	}
	if o.MinMemoryGiB, o.MaxMemoryGiB, err = parseMinMax("--memory-total", o.MemoryTotal, maxMemoryTotalGiB); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, atLeast("--max-nodes-total", o.MaxNodesTotal, 0), atLeast("--max-nodes-per-scaleup", o.MaxNodesPerScaleUp, 1),
		between("--max-total-unready-percentage", o.MaxTotalUnreadyPercentage, 0, 100),
		atLeast("--ok-total-unready-count", o.OkTotalUnreadyCount, 0), atLeast("--max-bulk-nominations", o.MaxBulkNominations, 0),
		int32Range("--expendable-pods-priority-cutoff", o.ExpendablePodsPriorityCutoff),
		positive("--max-binpacking-time", o.MaxBinpackingTime), positive("--max-nodegroup-binpacking-duration", o.MaxNodeGroupBinpackingTime), positive("--initial-node-group-backoff-duration", o.InitialBackoff),
		positive("--max-node-group-backoff-duration", o.MaxBackoff), positive("--node-group-backoff-reset-timeout", o.BackoffReset),
		nonNegative("--new-pod-scale-up-delay", o.NewPodScaleUpDelay), validateLabelKeys("--balancing-ignore-label", o.BalancingIgnoreLabels),
		validateLabelKeys("--balancing-label", o.BalancingLabels))
	if len(o.BalancingLabels) > 0 && len(o.BalancingIgnoreLabels) > 0 {
		errs = append(errs, fmt.Errorf("--balancing-label=%q cannot be combined with --balancing-ignore-label=%q: the labels given replace every other comparison",
			o.BalancingLabels[0], o.BalancingIgnoreLabels[0]))
	}
	if o.InitialBackoff > o.MaxBackoff {
		errs = append(errs, fmt.Errorf("--initial-node-group-backoff-duration=%v is longer than --max-node-group-backoff-duration=%v", o.InitialBackoff, o.MaxBackoff))
	}
	if o.WriteStatusConfigMap {
		errs = append(errs, objectName("--status-config-map-name", o.StatusConfigMapName, "ConfigMap", false))
	}
	return errors.Join(errs...)
}

// parseMinMax parses MIN:MAX, two integers with 0 <= MIN <= MAX <= limit,
// as --cores-total and --memory-total take them. The error names the flag.
func parseMinMax(flag, value string, limit int64) (int64, int64, error) {
	lo, hi, ok := strings.Cut(value, ":")
	if !ok {
		return 0, 0, fmt.Errorf("%s=%q: want MIN:MAX", flag, value)
	}
	min, err1 := strconv.ParseInt(lo, 10, 64)
	max, err2 := strconv.ParseInt(hi, 10, 64)
	notInt := func(err error) bool { return err != nil && !errors.Is(err, strconv.ErrRange) }
	switch {
	case notInt(err1) || notInt(err2):
		return 0, 0, fmt.Errorf("%s=%q: MIN and MAX must be integers", flag, value)
	case err1 != nil || err2 != nil || min < 0 || min > max || max > limit:
		return 0, 0, fmt.Errorf("%s=%q: want 0 <= MIN <= MAX <= %d", flag, value, limit)
	}
	return min, max, nil
}

// validateLabelKeys checks each value of a flag that names node labels.
func validateLabelKeys(flag string, keys []string) error {
	var errs []error
	for _, k := range keys {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s=%q is not a label key: %s", flag, k, strings.Join(msgs, "; ")))
		}
	}
	return errors.Join(errs...)
}
