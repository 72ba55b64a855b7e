package core

import (
	"time"

	"github.com/tidal-autoscaler/tidal/core/clusterstate"
)

// Options are the node loop's settings, taken from flags.
type Options struct {
	Namespace    string
	ScanInterval time.Duration
	// Debounce and DebounceMax: a run triggered by a new unschedulable pod
	// waits until no new one came for Debounce, or DebounceMax passed, so a
	// burst of pods is one decision.
	Debounce    time.Duration
	DebounceMax time.Duration
	// RunTimeout bounds one iteration; an iteration that started is not
	// cancelled by shutdown.
	RunTimeout time.Duration

	Expander                     string
	MaxNodesTotal                int
	MaxMilliCores                int64
	MaxMemoryBytes               int64
	MaxNodesPerScaleUp           int
	MaxBinpackingTime            time.Duration
	BalanceSimilarNodeGroups     bool
	BalancingIgnoreLabels        []string
	ExpendablePodsPriorityCutoff int32
	NewPodScaleUpDelay           time.Duration

	ClusterState clusterstate.Options

	WriteStatusConfigMap   bool
	StatusConfigMapName    string
	RecordDuplicatedEvents bool
}

// DefaultOptions are Cluster Autoscaler's defaults where it has the option.
func DefaultOptions() Options {
	return Options{
		Namespace: "kube-system", ScanInterval: 10 * time.Second, Debounce: 250 * time.Millisecond, DebounceMax: 800 * time.Millisecond, RunTimeout: 5 * time.Minute,
		Expander: "least-waste", MaxMilliCores: 320000 * 1000, MaxMemoryBytes: 6400000 << 30, MaxNodesPerScaleUp: 1000,
		MaxBinpackingTime: 10 * time.Second, ExpendablePodsPriorityCutoff: -10,
		ClusterState: clusterstate.Options{
			MaxNodeProvisionTime: 15 * time.Minute, InitialBackoff: 5 * time.Minute, MaxBackoff: 30 * time.Minute,
			BackoffReset: 3 * time.Hour, MaxTotalUnreadyPercentage: 45, OkTotalUnreadyCount: 3,
		},
		WriteStatusConfigMap: true, StatusConfigMapName: "tidal-status",
	}
}
