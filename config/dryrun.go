package config

import (
	"fmt"

	"github.com/spf13/pflag"
)

// Shadow mode's own names: a tidal in --dry-run beside a real tidal (or a
// Cluster Autoscaler) never takes the real one's Lease or overwrites its
// status ConfigMap.
const (
	DryRunLeaseName           = "tidal-dry-run"
	DryRunStatusConfigMapName = "tidal-dry-run-status"
	// CAStatusConfigMapName is Cluster Autoscaler's status ConfigMap.
	CAStatusConfigMapName = "cluster-autoscaler-status"
)

// addDryRunFlag registers --dry-run.
func (o *Options) addDryRunFlag(fs *pflag.FlagSet) {
	fs.BoolVar(&o.DryRun, "dry-run", o.DryRun, "Shadow mode: decide as usual but act on nothing (no cloud call that changes a node group, "+
		"no taint, no eviction, no scale or status write of the pod loop); record each decision as a DryRun* event, "+
		"a log line and tidal_dry_run_* metrics. Its Lease and status ConfigMap default to "+DryRunLeaseName+" and "+
		DryRunStatusConfigMapName+", and it runs even while Cluster Autoscaler holds its Lease.")
}

// applyDryRunNames gives shadow mode its own Lease and status ConfigMap
// when the defaults were kept, and refuses names that belong to the
// autoscaler it runs beside.
func (o *Options) applyDryRunNames() error {
	if !o.DryRun {
		return nil
	}
	if o.LeaseName == NewOptions().LeaseName {
		o.LeaseName = DryRunLeaseName
	}
	if o.ScaleUp.StatusConfigMapName == DefaultScaleUpOptions().StatusConfigMapName {
		o.ScaleUp.StatusConfigMapName = DryRunStatusConfigMapName
	}
	if o.LeaderElect && o.Coexist.CALeaseName != "" && o.Namespace == o.Coexist.CALeaseNamespace && o.LeaseName == o.Coexist.CALeaseName {
		return fmt.Errorf("--dry-run with --leader-elect-resource-name=%q: that is Cluster Autoscaler's Lease (--cluster-autoscaler-lease=%s); "+
			"a shadow must not hold it, leave the default %s", o.LeaseName, o.Coexist.ClusterAutoscalerLease, DryRunLeaseName)
	}
	if o.ScaleUp.StatusConfigMapName == CAStatusConfigMapName {
		return fmt.Errorf("--dry-run with --status-config-map-name=%q: that is Cluster Autoscaler's status ConfigMap; leave the default %s",
			o.ScaleUp.StatusConfigMapName, DryRunStatusConfigMapName)
	}
	return nil
}
