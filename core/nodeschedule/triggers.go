package nodeschedule

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
)

// Scopes and resources of an allocation trigger.
const (
	ScopeCluster   = "cluster"
	ScopeNodeGroup = "nodeGroup"
	ResourceCPU    = "cpu"
	ResourceMemory = "memory"
)

// Trigger adds nodes to a group while an allocation rate stays above a
// threshold.
type Trigger struct {
	Name      string
	NodeGroup string
	// Scope is ScopeCluster (the rate of all ready nodes) or ScopeNodeGroup
	// (the rate of the group's ready nodes).
	Scope    string
	Resource string
	// Threshold is in percent; the rate must stay above it for For.
	Threshold float64
	For       time.Duration
	// Cooldown is how long after a trigger it does not trigger again.
	Cooldown time.Duration
	// Add is a node count, or a percentage of the group's target size
	// (rounded up, at least one node).
	Add intstr.IntOrString
}

type triggerYAML struct {
	Name      string              `json:"name"`
	NodeGroup string              `json:"nodeGroup"`
	Scope     string              `json:"scope"`
	Resource  string              `json:"resource"`
	Threshold *float64            `json:"threshold"`
	For       string              `json:"for"`
	Cooldown  string              `json:"cooldown"`
	Add       *intstr.IntOrString `json:"add"`
}

func parseTrigger(raw json.RawMessage, knownGroup func(string) bool) (Trigger, string, error) {
	var y triggerYAML
	if err := decodeItem(raw, &y, &y.Name, &y.NodeGroup, knownGroup); err != nil {
		return Trigger{}, y.Name, err
	}
	t := Trigger{Name: y.Name, NodeGroup: y.NodeGroup, Scope: y.Scope, Resource: y.Resource}
	if t.Scope == "" {
		t.Scope = ScopeNodeGroup
	}
	var err error
	switch {
	case t.Scope != ScopeCluster && t.Scope != ScopeNodeGroup:
		return Trigger{}, y.Name, fmt.Errorf("scope %q: must be %s or %s", y.Scope, ScopeCluster, ScopeNodeGroup)
	case t.Resource != ResourceCPU && t.Resource != ResourceMemory:
		return Trigger{}, y.Name, fmt.Errorf("resource %q: must be %s or %s", y.Resource, ResourceCPU, ResourceMemory)
	case y.Threshold == nil:
		return Trigger{}, y.Name, fmt.Errorf("threshold: missing")
	case *y.Threshold <= 0 || *y.Threshold >= 100:
		return Trigger{}, y.Name, fmt.Errorf("threshold %g: must be a percentage between 0 and 100", *y.Threshold)
	}
	t.Threshold = *y.Threshold
	if t.For, err = duration("for", y.For); err != nil {
		return Trigger{}, y.Name, err
	}
	if t.Cooldown, err = duration("cooldown", y.Cooldown); err != nil {
		return Trigger{}, y.Name, err
	}
	if t.Add, err = parseAdd(y.Add); err != nil {
		return Trigger{}, y.Name, err
	}
	return t, y.Name, nil
}

func parseAdd(a *intstr.IntOrString) (intstr.IntOrString, error) {
	if a == nil {
		return intstr.IntOrString{}, fmt.Errorf("add: missing")
	}
	v, err := intstr.GetScaledValueFromIntOrPercent(a, 100, true)
	if err != nil || v < 1 || a.Type == intstr.String && !strings.HasSuffix(a.StrVal, "%") {
		return intstr.IntOrString{}, fmt.Errorf("add %s: must be a node count of at least 1 or a percentage such as 20%%", a.String())
	}
	return *a, nil
}

// Nodes is how many nodes a trigger adds to a group of target size target.
func (t Trigger) Nodes(target int) int {
	n, err := intstr.GetScaledValueFromIntOrPercent(&t.Add, target, true)
	if err != nil {
		return 1
	}
	return max(1, n)
}
