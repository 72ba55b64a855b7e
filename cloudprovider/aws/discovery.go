package aws

import (
	"strings"
	"time"
)

const (
	// ProviderName is this provider's --cloud-provider value.
	ProviderName = "aws"
	// DefaultRefreshInterval is how long group descriptions are cached
	// when Config.RefreshInterval is not set.
	DefaultRefreshInterval = time.Minute
	// NodeReservationEKS subtracts what the EKS AMIs reserve for the
	// system from a template node's capacity.
	NodeReservationEKS = "eks"
	// NodeReservationNone makes a template node's allocatable equal its
	// capacity, as Cluster Autoscaler does.
	NodeReservationNone = "none"
)

// TagFilter is one tag an auto-discovered group must carry: the key alone,
// or the key with this exact value.
type TagFilter struct {
	Key   string
	Value string
}

func (f TagFilter) String() string {
	if f.Value == "" {
		return f.Key
	}
	return f.Key + "=" + f.Value
}

// AutoDiscoverySpec is one tag set: an Auto Scaling Group is managed when
// it carries every tag.
type AutoDiscoverySpec struct {
	Tags []TagFilter
}

func (s AutoDiscoverySpec) String() string {
	parts := make([]string, len(s.Tags))
	for i, t := range s.Tags {
		parts[i] = t.String()
	}
	return "asg:tag=" + strings.Join(parts, ",")
}
