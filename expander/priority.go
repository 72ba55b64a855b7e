package expander

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"

	"sigs.k8s.io/yaml"
)

// Priority expander ConfigMaps, in tidal's namespace. tidal's own name wins
// when both exist; Cluster Autoscaler's is accepted so users can reuse it.
const (
	PriorityConfigMapName   = "tidal-priority-expander"
	CAPriorityConfigMapName = "cluster-autoscaler-priority-expander"
	// PriorityConfigMapKey holds the YAML map from priority to regexps.
	PriorityConfigMapKey = "priorities"
)

// Priorities is the priority expander's configuration: node groups whose
// ID matches one of a tier's regular expressions have that tier's priority;
// the highest wins.
type Priorities struct {
	tiers []tier
}

type tier struct {
	priority int
	patterns []*regexp.Regexp
}

// ParsePriorities parses the `priorities` value of the ConfigMap, the same
// format as Cluster Autoscaler's: a YAML map from integer priority to a list
// of regular expressions over node-group IDs. The error says what is wrong.
func ParsePriorities(value string) (*Priorities, error) {
	var raw map[string][]string
	if err := yaml.UnmarshalStrict([]byte(value), &raw); err != nil {
		return nil, fmt.Errorf("want a map from integer priority to a list of regular expressions: %w", err)
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("no priorities given")
	}
	p := &Priorities{}
	for key, exprs := range raw {
		prio, err := strconv.Atoi(key)
		if err != nil {
			return nil, fmt.Errorf("priority %q is not an integer", key)
		}
		t := tier{priority: prio}
		for _, e := range exprs {
			re, err := regexp.Compile(e)
			if err != nil {
				return nil, fmt.Errorf("priority %d: regular expression %q: %w", prio, e, err)
			}
			t.patterns = append(t.patterns, re)
		}
		p.tiers = append(p.tiers, t)
	}
	sort.Slice(p.tiers, func(i, j int) bool { return p.tiers[i].priority > p.tiers[j].priority })
	return p, nil
}

// Of returns a group's priority, and false when no expression matches it.
func (p *Priorities) Of(groupID string) (int, bool) {
	for _, t := range p.tiers {
		for _, re := range t.patterns {
			if re.MatchString(groupID) {
				return t.priority, true
			}
		}
	}
	return 0, false
}

// priority keeps the options of the highest-priority groups. Groups that no
// expression matches are dropped, unless none matches at all. Without a
// valid configuration it keeps every option, so the next strategy decides.
type priority struct{}

func (priority) Name() string { return PriorityName }

func (priority) BestOptions(options []Option, ctx *Context) []Option {
	if ctx.Priorities == nil {
		return options
	}
	var matched []Option
	prios := map[string]float64{}
	for _, o := range options {
		if p, ok := ctx.Priorities.Of(o.NodeGroup); ok {
			matched = append(matched, o)
			prios[o.NodeGroup] = float64(p)
		}
	}
	if len(matched) == 0 {
		return options
	}
	return keepBest(matched, func(o Option) float64 { return prios[o.NodeGroup] }, higher)
}
