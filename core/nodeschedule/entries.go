package nodeschedule

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/tidal-autoscaler/tidal/schedule"
)

// Entry is a scheduled size of a node group for a recurring window.
type Entry struct {
	Name      string
	NodeGroup string
	Window    schedule.Window
	MinSize   int
	// MaxSize, when HasMax, caps the group while the window is open.
	MaxSize int
	HasMax  bool
}

type entryYAML struct {
	Name      string `json:"name"`
	NodeGroup string `json:"nodeGroup"`
	Start     string `json:"start"`
	Duration  string `json:"duration"`
	TimeZone  string `json:"timeZone"`
	MinSize   *int   `json:"minSize"`
	MaxSize   *int   `json:"maxSize"`
}

func parseEntry(raw json.RawMessage, defaultZone string, knownGroup func(string) bool) (Entry, string, error) {
	var y entryYAML
	if err := decodeItem(raw, &y, &y.Name, &y.NodeGroup, knownGroup); err != nil {
		return Entry{}, y.Name, err
	}
	e := Entry{Name: y.Name, NodeGroup: y.NodeGroup}
	d, err := duration("duration", y.Duration)
	if err != nil {
		return Entry{}, y.Name, err
	}
	zone := y.TimeZone
	if zone == "" {
		zone = defaultZone
	}
	if e.Window, err = schedule.Parse(y.Start, d, zone); err != nil {
		return Entry{}, y.Name, err
	}
	switch {
	case y.MinSize == nil:
		return Entry{}, y.Name, fmt.Errorf("minSize: missing")
	case *y.MinSize < 0:
		return Entry{}, y.Name, fmt.Errorf("minSize %d: must not be negative", *y.MinSize)
	case y.MaxSize != nil && *y.MaxSize < *y.MinSize:
		return Entry{}, y.Name, fmt.Errorf("maxSize %d: below minSize %d", *y.MaxSize, *y.MinSize)
	}
	e.MinSize = *y.MinSize
	if y.MaxSize != nil {
		e.MaxSize, e.HasMax = *y.MaxSize, true
	}
	return e, y.Name, nil
}

// Bounds is what the active entries of a group set.
type Bounds struct {
	// Min is the highest minimum of the active entries.
	Min int
	// Max, when HasMax, is the lowest maximum the active entries set, but
	// never below Min.
	Max    int
	HasMax bool
	// Entries are the active entries' names.
	Entries []string
}

// At is, per node group, what the entries active at t (or opening within
// the lead time) set, and the earliest time after t when that may change
// (zero: never).
func (c Config) At(t time.Time) (map[string]Bounds, time.Time) {
	out := map[string]Bounds{}
	var next time.Time
	for _, e := range c.Entries {
		if n := e.Window.NextChange(t, c.LeadTime); !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
		if !e.Window.Active(t, c.LeadTime) {
			continue
		}
		b := out[e.NodeGroup]
		b.Min = max(b.Min, e.MinSize)
		if e.HasMax && (!b.HasMax || e.MaxSize < b.Max) {
			b.Max, b.HasMax = e.MaxSize, true
		}
		b.Entries = append(b.Entries, e.Name)
		out[e.NodeGroup] = b
	}
	for g, b := range out {
		if b.HasMax && b.Max < b.Min {
			b.Max = b.Min
			out[g] = b
		}
	}
	return out, next
}

// Effective is a group's size range: the cloud's minimum raised by the
// schedule, the cloud's maximum lowered by it. The cloud's maximum is never
// exceeded, and the range is never empty.
func Effective(cloudMin, cloudMax int, b Bounds) (minSize, maxSize int) {
	minSize, maxSize = max(cloudMin, b.Min), cloudMax
	if b.HasMax && b.Max < maxSize {
		maxSize = b.Max
	}
	minSize = min(minSize, cloudMax)
	maxSize = max(maxSize, minSize)
	return minSize, maxSize
}

// Group is a node group as the decisions see it.
type Group struct {
	ID string
	// Target is the cloud's target size.
	Target int
	// Min and Max are the effective range (Effective).
	Min, Max int
	// Unavailable, when set, keeps the group from growing (backed off, no
	// template...).
	Unavailable bool
}

// Raise is a group to grow, from its target size to To, and why.
type Raise struct {
	Group    string
	From, To int
	// Entries are the schedule entries that set the minimum, or the
	// trigger that fired.
	Entries []string
}

// Raises are the groups with active entries whose target size is below
// their effective minimum, raised to it. A group no entry names is left as
// it is, even below the cloud's minimum, unless enforceMin
// (--enforce-node-group-min-size) asks to raise every group to its minimum.
func Raises(groups []Group, bounds map[string]Bounds, enforceMin bool) []Raise {
	var out []Raise
	for _, g := range groups {
		if _, ok := bounds[g.ID]; !ok && !enforceMin || g.Unavailable || g.Target >= g.Min {
			continue
		}
		out = append(out, Raise{Group: g.ID, From: g.Target, To: g.Min, Entries: bounds[g.ID].Entries})
	}
	return out
}
