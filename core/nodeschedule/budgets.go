package nodeschedule

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/tidal-autoscaler/tidal/core/scaledown"
	"github.com/tidal-autoscaler/tidal/schedule"
)

// BudgetsKey holds the list of disruption budgets for time windows (YAML).
const BudgetsKey = "disruptionBudgets"

// BudgetWindow is a disruption budget that holds while a recurring window
// is open, for a node group or (NodeGroup "") the cluster: during it, the
// tightest of the flags' budget and the open windows' applies.
type BudgetWindow struct {
	Name      string
	NodeGroup string
	Window    schedule.Window
	Budget    scaledown.DisruptionBudget
}

type budgetYAML struct {
	Name      string              `json:"name"`
	NodeGroup string              `json:"nodeGroup"`
	Start     string              `json:"start"`
	Duration  string              `json:"duration"`
	TimeZone  string              `json:"timeZone"`
	Nodes     *intstr.IntOrString `json:"nodes"`
}

func parseBudget(raw json.RawMessage, defaultZone string, knownGroup func(string) bool) (BudgetWindow, string, error) {
	var y budgetYAML
	if err := yaml.UnmarshalStrict(raw, &y); err != nil {
		return BudgetWindow{}, y.Name, err
	}
	switch {
	case y.Name == "":
		return BudgetWindow{}, "", errors.New("name: missing")
	case y.NodeGroup != "" && knownGroup != nil && !knownGroup(y.NodeGroup):
		return BudgetWindow{}, y.Name, fmt.Errorf("nodeGroup: %q is not a node group of the cloud provider", y.NodeGroup)
	case y.Nodes == nil:
		return BudgetWindow{}, y.Name, errors.New("nodes: missing")
	}
	b := BudgetWindow{Name: y.Name, NodeGroup: y.NodeGroup}
	var err error
	if b.Budget, err = scaledown.ParseDisruptionBudget(y.Nodes.String()); err != nil {
		return BudgetWindow{}, y.Name, fmt.Errorf("nodes: %w", err)
	}
	d, err := duration("duration", y.Duration)
	if err != nil {
		return BudgetWindow{}, y.Name, err
	}
	zone := y.TimeZone
	if zone == "" {
		zone = defaultZone
	}
	if b.Window, err = schedule.Parse(y.Start, d, zone); err != nil {
		return BudgetWindow{}, y.Name, err
	}
	return b, y.Name, nil
}

// ActiveBudgets are the budgets of the windows open at a time: the
// cluster's, each node group's, and the windows' names.
type ActiveBudgets struct {
	Cluster []scaledown.DisruptionBudget
	Groups  map[string][]scaledown.DisruptionBudget
	Names   []string
}

// BudgetsAt is what the budget windows open at t set (a window opens at
// its start, with no lead time), and the earliest time after t when that
// may change (zero: never).
func (c Config) BudgetsAt(t time.Time) (ActiveBudgets, time.Time) {
	out := ActiveBudgets{Groups: map[string][]scaledown.DisruptionBudget{}}
	var next time.Time
	for _, b := range c.Budgets {
		if n := b.Window.NextChange(t, 0); !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
		if !b.Window.Active(t, 0) {
			continue
		}
		out.Names = append(out.Names, b.Name)
		if b.NodeGroup == "" {
			out.Cluster = append(out.Cluster, b.Budget)
		} else {
			out.Groups[b.NodeGroup] = append(out.Groups[b.NodeGroup], b.Budget)
		}
	}
	return out, next
}
