package cloudprovider

import (
	"fmt"
	"sort"
	"strings"
)

// Resource names used by ResourceLimiter, as in Cluster Autoscaler.
const (
	// ResourceNameCores counts CPU cores.
	ResourceNameCores = "cpu"
	// ResourceNameMemory counts memory in bytes.
	ResourceNameMemory = "memory"
)

// ResourceLimiter holds cluster-wide minimum and maximum totals per resource
// (cores, memory bytes, GPUs by type).
type ResourceLimiter struct {
	minLimits map[string]int64
	maxLimits map[string]int64
}

// NewResourceLimiter copies the given limits.
func NewResourceLimiter(minLimits, maxLimits map[string]int64) *ResourceLimiter {
	l := &ResourceLimiter{minLimits: map[string]int64{}, maxLimits: map[string]int64{}}
	for k, v := range minLimits {
		l.minLimits[k] = v
	}
	for k, v := range maxLimits {
		l.maxLimits[k] = v
	}
	return l
}

// GetMin returns the minimum for a resource, 0 when unset.
func (l *ResourceLimiter) GetMin(resource string) int64 { return l.minLimits[resource] }

// GetMax returns the maximum for a resource and whether one is set.
func (l *ResourceLimiter) GetMax(resource string) (int64, bool) {
	v, ok := l.maxLimits[resource]
	return v, ok
}

// Resources lists every resource with a limit, sorted.
func (l *ResourceLimiter) Resources() []string {
	seen := map[string]bool{}
	for k := range l.minLimits {
		seen[k] = true
	}
	for k := range l.maxLimits {
		seen[k] = true
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (l *ResourceLimiter) String() string {
	var parts []string
	for _, r := range l.Resources() {
		max, _ := l.GetMax(r)
		parts = append(parts, fmt.Sprintf("%s:%d-%d", r, l.GetMin(r), max))
	}
	return strings.Join(parts, ", ")
}
