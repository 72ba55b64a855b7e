package core

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Cluster Autoscaler's status ConfigMap layout (--status-config-map-layout=
// cluster-autoscaler): its ClusterAutoscalerStatus YAML under the same key,
// with its last-updated annotation, so that scripts reading Cluster
// Autoscaler's status keep working. The field names and values are Cluster
// Autoscaler's; the counts are those tidal keeps.
const (
	// CAStatusUpdatedAnnotation is Cluster Autoscaler's last-updated annotation.
	CAStatusUpdatedAnnotation = "cluster-autoscaler.kubernetes.io/last-updated"
	// CAStatusTimeFormat is the layout of its times.
	CAStatusTimeFormat = "2006-01-02 15:04:05.999999999 -0700 MST"
)

// CAStatus is Cluster Autoscaler's status YAML.
type CAStatus struct {
	Time             string              `json:"time,omitempty"`
	AutoscalerStatus string              `json:"autoscalerStatus,omitempty"`
	Message          string              `json:"message,omitempty"`
	ClusterWide      CAClusterWide       `json:"clusterWide,omitempty"`
	NodeGroups       []CANodeGroupStatus `json:"nodeGroups,omitempty"`
}

// CAClusterWide is the cluster's health, scale-up and scale-down.
type CAClusterWide struct {
	Health    CAHealth    `json:"health,omitempty"`
	ScaleUp   CACondition `json:"scaleUp,omitempty"`
	ScaleDown CAScaleDown `json:"scaleDown,omitempty"`
}

// CAHealth is a health condition with node counts; node groups add their
// sizes.
type CAHealth struct {
	Status              string      `json:"status,omitempty"`
	NodeCounts          CANodeCount `json:"nodeCounts,omitempty"`
	CloudProviderTarget *int        `json:"cloudProviderTarget,omitempty"`
	MinSize             *int        `json:"minSize,omitempty"`
	MaxSize             *int        `json:"maxSize,omitempty"`
	CATimes             `json:",inline"`
}

// CANodeCount counts nodes.
type CANodeCount struct {
	Registered       CARegistered `json:"registered,omitempty"`
	LongUnregistered int          `json:"longUnregistered"`
	Unregistered     int          `json:"unregistered"`
}

// CARegistered counts registered nodes.
type CARegistered struct {
	Total      int       `json:"total"`
	Ready      int       `json:"ready"`
	NotStarted int       `json:"notStarted"`
	Unready    CAUnready `json:"unready,omitempty"`
}

// CAUnready counts registered nodes that are not ready.
type CAUnready struct {
	Total           int `json:"total"`
	ResourceUnready int `json:"resourceUnready"`
}

// CACondition is a scale-up condition; node groups add their backoff.
type CACondition struct {
	Status      string         `json:"status,omitempty"`
	BackoffInfo *CABackoffInfo `json:"backoffInfo,omitempty"`
	CATimes     `json:",inline"`
}

// CABackoffInfo is why a node group is backed off.
type CABackoffInfo struct {
	ErrorCode    string `json:"errorCode,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
}

// CAScaleDown is a scale-down condition.
type CAScaleDown struct {
	Status     string `json:"status,omitempty"`
	Candidates int    `json:"candidates,omitempty"`
	CATimes    `json:",inline"`
}

// CATimes are a condition's probe and transition times.
type CATimes struct {
	LastProbeTime      metav1.Time `json:"lastProbeTime"`
	LastTransitionTime metav1.Time `json:"lastTransitionTime"`
}

// CANodeGroupStatus is one node group.
type CANodeGroupStatus struct {
	Name      string      `json:"name,omitempty"`
	Health    CAHealth    `json:"health,omitempty"`
	ScaleUp   CACondition `json:"scaleUp,omitempty"`
	ScaleDown CAScaleDown `json:"scaleDown,omitempty"`
}

// caTransitions remembers since when each condition has had its status,
// by condition key.
type caTransitions map[string]caSince

type caSince struct {
	status string
	since  time.Time
}

// times gives the condition key's times at now, its transition carried
// over from prev while its status stays the same, and records it in next.
func (prev caTransitions) times(next caTransitions, key, status string, now time.Time) CATimes {
	since := now
	if p, ok := prev[key]; ok && p.status == status {
		since = p.since
	}
	next[key] = caSince{status: status, since: since}
	return CATimes{LastProbeTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(since)}
}

// clusterAutoscalerStatus renders s in Cluster Autoscaler's layout at now,
// with the transition times of prev (nil at first), and returns the
// transitions to pass next time.
func clusterAutoscalerStatus(s Status, prev caTransitions, now time.Time) (CAStatus, caTransitions) {
	next := caTransitions{}
	h := s.ClusterWide.Health
	out := CAStatus{Time: now.Format(CAStatusTimeFormat), AutoscalerStatus: "Running", Message: h.Reason}
	registered, ready := h.NodeCounts["registered"], h.NodeCounts["ready"]
	out.ClusterWide.Health = CAHealth{Status: h.Status,
		NodeCounts: CANodeCount{Registered: CARegistered{Total: registered, Ready: ready, NotStarted: h.NodeCounts["notStarted"],
			Unready: CAUnready{Total: h.NodeCounts["unready"]}}},
		CATimes: prev.times(next, "health", h.Status, now)}
	su := caClusterScaleUp(s.ClusterWide.ScaleUp)
	out.ClusterWide.ScaleUp = CACondition{Status: su, CATimes: prev.times(next, "scaleUp", su, now)}
	perGroup := map[string]int{}
	for _, u := range s.ClusterWide.ScaleDown.Unneeded {
		perGroup[u.NodeGroup]++
	}
	out.ClusterWide.ScaleDown = caScaleDown(len(s.ClusterWide.ScaleDown.Unneeded), prev, next, "scaleDown", now)
	for _, g := range s.NodeGroups {
		out.NodeGroups = append(out.NodeGroups, caGroup(g, perGroup[g.Name], prev, next, now))
	}
	return out, next
}

// caClusterScaleUp maps tidal's scale-up status to Cluster Autoscaler's.
func caClusterScaleUp(s ScaleUpStatus) string {
	switch {
	case len(s.ScaleUps) > 0:
		return "InProgress"
	case s.UnschedulablePods > 0:
		return "Needed"
	}
	return "NoActivity"
}

func caScaleDown(candidates int, prev, next caTransitions, key string, now time.Time) CAScaleDown {
	status := "NoCandidates"
	if candidates > 0 {
		status = "CandidatesPresent"
	}
	return CAScaleDown{Status: status, Candidates: candidates, CATimes: prev.times(next, key, status, now)}
}

func caGroup(g NodeGroupStatus, candidates int, prev, next caTransitions, now time.Time) CANodeGroupStatus {
	key := "group/" + g.Name + "/"
	health := "Healthy"
	if g.Health == "Unusable" {
		health = "Unhealthy"
	}
	target, minSize, maxSize := g.Target, g.MinSize, g.MaxSize
	unready := max(g.Registered-g.Ready, 0)
	out := CANodeGroupStatus{Name: g.Name,
		Health: CAHealth{Status: health, CloudProviderTarget: &target, MinSize: &minSize, MaxSize: &maxSize,
			NodeCounts: CANodeCount{Registered: CARegistered{Total: g.Registered, Ready: g.Ready, Unready: CAUnready{Total: unready}},
				Unregistered: max(g.Upcoming-unready, 0)},
			CATimes: prev.times(next, key+"health", health, now)},
		ScaleDown: caScaleDown(candidates, prev, next, key+"scaleDown", now),
	}
	su := "NoActivity"
	switch {
	case g.Health == "BackedOff":
		su = "Backoff"
		out.ScaleUp.BackoffInfo = &CABackoffInfo{ErrorCode: g.Reason, ErrorMessage: g.LastFailure}
	case g.Upcoming > 0:
		su = "InProgress"
	}
	out.ScaleUp.Status, out.ScaleUp.CATimes = su, prev.times(next, key+"scaleUp", su, now)
	return out
}
