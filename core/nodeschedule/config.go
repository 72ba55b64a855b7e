// Package nodeschedule decides node group sizes by the clock and by
// allocation: scheduled minimums (and maximums) of node groups for
// recurring time windows, and allocation triggers that add nodes to a group
// while the cluster's or the group's CPU or memory allocation rate stays
// above a threshold. It is pure: the configuration, the groups, the rates
// and the time are arguments.
package nodeschedule

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// The ConfigMap tidal reads schedules and triggers from, in its namespace,
// and its keys.
const (
	ConfigMapName = "tidal-schedules"
	// SchedulesKey holds the list of scheduled entries (YAML).
	SchedulesKey = "schedules"
	// TriggersKey holds the list of allocation triggers (YAML).
	TriggersKey = "allocationTriggers"
	// LeadTimeKey is how long before its window opens an entry's minimum
	// applies (a duration such as 5m).
	LeadTimeKey = "leadTime"
	// TimeZoneKey is the time zone of the entries that name none.
	TimeZoneKey = "timeZone"
	// DefaultLeadTime is the lead time when LeadTimeKey is absent: about
	// the time a node takes to start.
	DefaultLeadTime = 5 * time.Minute
)

// Config is the parsed ConfigMap: the valid entries and triggers, and a
// problem for each one that is not (it is left out; the others apply).
type Config struct {
	LeadTime time.Duration
	Entries  []Entry
	Triggers []Trigger
	// Budgets are the disruption budgets of time windows.
	Budgets  []BudgetWindow
	Problems []Problem
}

// Problem is a malformed part of the configuration.
type Problem struct {
	// Key is the ConfigMap key, Item the entry or trigger ("" for the key
	// as a whole).
	Key, Item string
	Err       error
}

func (p Problem) Error() string {
	if p.Item == "" {
		return fmt.Sprintf("%s: %v", p.Key, p.Err)
	}
	return fmt.Sprintf("%s %s: %v", p.Key, p.Item, p.Err)
}

// Parse reads the ConfigMap's data. knownGroup tells whether a node group
// id exists: an entry or trigger for another group is a problem. A nil or
// empty data is no schedules and no triggers.
func Parse(data map[string]string, knownGroup func(string) bool) Config {
	c := Config{LeadTime: DefaultLeadTime}
	if v, ok := data[LeadTimeKey]; ok {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		switch {
		case err != nil:
			c.Problems = append(c.Problems, Problem{Key: LeadTimeKey, Err: fmt.Errorf("%q: %w; using %s", v, err, DefaultLeadTime)})
		case d < 0:
			c.Problems = append(c.Problems, Problem{Key: LeadTimeKey, Err: fmt.Errorf("%q: must not be negative; using %s", v, DefaultLeadTime)})
		default:
			c.LeadTime = d
		}
	}
	zone := strings.TrimSpace(data[TimeZoneKey])
	if _, err := time.LoadLocation(zone); err != nil {
		c.Problems = append(c.Problems, Problem{Key: TimeZoneKey, Err: fmt.Errorf("%q: %w; using UTC", zone, err)})
		zone = ""
	}
	c.Entries = parseList(data, SchedulesKey, &c.Problems, func(raw json.RawMessage) (Entry, string, error) {
		return parseEntry(raw, zone, knownGroup)
	}, func(e Entry) string { return e.Name })
	c.Triggers = parseList(data, TriggersKey, &c.Problems, func(raw json.RawMessage) (Trigger, string, error) {
		return parseTrigger(raw, knownGroup)
	}, func(t Trigger) string { return t.Name })
	c.Budgets = parseList(data, BudgetsKey, &c.Problems, func(raw json.RawMessage) (BudgetWindow, string, error) {
		return parseBudget(raw, zone, knownGroup)
	}, func(b BudgetWindow) string { return b.Name })
	return c
}

// parseList parses each item of the YAML list under key on its own: one
// that is malformed, or named as an earlier one, adds a problem and is
// left out.
func parseList[T any](data map[string]string, key string, problems *[]Problem, parse func(json.RawMessage) (T, string, error),
	nameOf func(T) string) []T {
	v, ok := data[key]
	if !ok || strings.TrimSpace(v) == "" {
		return nil
	}
	var list []json.RawMessage
	if err := yaml.Unmarshal([]byte(v), &list); err != nil {
		*problems = append(*problems, Problem{Key: key, Err: fmt.Errorf("not a YAML list: %w", err)})
		return nil
	}
	var out []T
	for i, raw := range list {
		item, name, err := parse(raw)
		if err == nil {
			err = unique(out, name, nameOf)
		}
		if err != nil {
			*problems = append(*problems, Problem{Key: key, Item: itemName(i, name), Err: err})
			continue
		}
		out = append(out, item)
	}
	return out
}

// itemName names an item in a problem: by its name, else by its position.
func itemName(i int, name string) string {
	if name != "" {
		return fmt.Sprintf("%q", name)
	}
	return fmt.Sprintf("#%d", i+1)
}

func unique[T any](have []T, name string, nameOf func(T) string) error {
	for _, h := range have {
		if nameOf(h) == name {
			return fmt.Errorf("name: %q is used by an earlier item", name)
		}
	}
	return nil
}

// decodeItem decodes one item strictly (an unknown field is an error) and
// requires its name and node group.
func decodeItem(raw json.RawMessage, into any, name, group *string, knownGroup func(string) bool) error {
	if err := yaml.UnmarshalStrict(raw, into); err != nil {
		return err
	}
	switch {
	case *name == "":
		return errors.New("name: missing")
	case *group == "":
		return errors.New("nodeGroup: missing")
	case knownGroup != nil && !knownGroup(*group):
		return fmt.Errorf("nodeGroup: %q is not a node group of the cloud provider", *group)
	}
	return nil
}

// duration reads a required positive duration field.
func duration(field, v string) (time.Duration, error) {
	if strings.TrimSpace(v) == "" {
		return 0, fmt.Errorf("%s: missing", field)
	}
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("%s %q: %w", field, v, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%s %q: must be positive", field, v)
	}
	return d, nil
}
