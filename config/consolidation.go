package config

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
)

// ConsolidationOptions are the flags of replacements (consolidation) and
// of the disruption budgets removals and replacements share.
type ConsolidationOptions struct {
	Replace           bool
	MinSavingFraction float64
	MinSavingPerHour  float64
	MaxNodes          int
	Backoff           time.Duration
	MaxBackoff        time.Duration
	// Budget and GroupBudget are the flags as given; Validate parses them
	// into the fields below.
	Budget, GroupBudget string

	// Parsed: the cluster's budget, every group's, and groups' own.
	ClusterBudget       scaledown.DisruptionBudget
	DefaultGroupBudget  scaledown.DisruptionBudget
	GroupBudgetsByGroup map[string]scaledown.DisruptionBudget
}

// DefaultConsolidationOptions: replacement off until proven, a saving of
// at least 5% of the old nodes' cost (any strict saving, with a floor
// against churn), no disruption budget beyond the parallelism flags.
func DefaultConsolidationOptions() ConsolidationOptions {
	return ConsolidationOptions{MinSavingFraction: 0.05, MaxNodes: 10, Backoff: 5 * time.Minute, MaxBackoff: 30 * time.Minute}
}

// AddFlags registers the consolidation flags.
func (o *ConsolidationOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Replace, "consolidation-replace", o.Replace, "Replace nodes by fewer or cheaper ones of any node group with a price (single- and multi-node consolidation). Removals of unneeded nodes are scale-down's (--scale-down-enabled).")
	fs.Float64Var(&o.MinSavingFraction, "consolidation-min-saving-fraction", o.MinSavingFraction, "Least saving of a replacement, as a share of the old nodes' price per hour (0 to 1).")
	fs.Float64Var(&o.MinSavingPerHour, "consolidation-min-saving-per-hour", o.MinSavingPerHour, "Least saving of a replacement per hour, in the provider's price unit.")
	fs.IntVar(&o.MaxNodes, "consolidation-max-nodes", o.MaxNodes, "Most old nodes one multi-node replacement takes; below 2: no multi-node replacement.")
	fs.DurationVar(&o.Backoff, "consolidation-backoff", o.Backoff, "Wait after a replacement failed (its new nodes did not come in time, or a pod would not land) before the next; doubled per failure in a row.")
	fs.DurationVar(&o.MaxBackoff, "consolidation-max-backoff", o.MaxBackoff, "Longest wait after failed replacements.")
	fs.StringVar(&o.Budget, "disruption-budget", o.Budget, "Most nodes of the cluster removed or replaced at once: a count (\"3\") or a share of the nodes (\"10%\"); empty: no budget.")
	fs.StringVar(&o.GroupBudget, "node-group-disruption-budget", o.GroupBudget, "Most nodes of each node group removed or replaced at once: a count or a share of its size for every group, and GROUP=BUDGET for a group's own, comma-separated (\"20%,big=1\"); empty: no budget.")
}

// Validate checks the flags and parses the budgets.
func (o *ConsolidationOptions) Validate() error {
	errs := []error{between("--consolidation-min-saving-fraction", o.MinSavingFraction, 0, 1),
		nonNegativeFloat("--consolidation-min-saving-per-hour", o.MinSavingPerHour),
		nonNegative("--consolidation-backoff", o.Backoff), nonNegative("--consolidation-max-backoff", o.MaxBackoff)}
	if o.Budget != "" {
		b, err := scaledown.ParseDisruptionBudget(o.Budget)
		errs = append(errs, wrapFlag("--disruption-budget", err))
		o.ClusterBudget = b
	}
	o.GroupBudgetsByGroup = map[string]scaledown.DisruptionBudget{}
	for _, item := range strings.Split(o.GroupBudget, ",") {
		if strings.TrimSpace(item) == "" {
			continue
		}
		group, value, own := strings.Cut(item, "=")
		if !own {
			value = group
		}
		b, err := scaledown.ParseDisruptionBudget(value)
		if err != nil {
			errs = append(errs, wrapFlag("--node-group-disruption-budget", err))
			continue
		}
		if own {
			o.GroupBudgetsByGroup[strings.TrimSpace(group)] = b
		} else {
			o.DefaultGroupBudget = b
		}
	}
	return errors.Join(errs...)
}

func wrapFlag(flag string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", flag, err)
}

func nonNegativeFloat(flag string, v float64) error {
	if v < 0 {
		return fmt.Errorf("%s=%v must not be negative", flag, v)
	}
	return nil
}
