package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// Status ConfigMap layouts (--status-config-map-layout).
const (
	// StatusLayoutTidal is tidal's own status YAML.
	StatusLayoutTidal = "tidal"
	// StatusLayoutClusterAutoscaler is Cluster Autoscaler's
	// (ClusterAutoscalerStatus), for scripts written for it.
	StatusLayoutClusterAutoscaler = "cluster-autoscaler"
)

// CoexistOptions say how tidal lives beside Cluster Autoscaler: the Lease
// whose renewal by a running Cluster Autoscaler keeps tidal's node loop from
// acting, and the layout of the status ConfigMap.
type CoexistOptions struct {
	// ClusterAutoscalerLease is NAMESPACE/NAME of Cluster Autoscaler's
	// leader Lease; empty turns the check off.
	ClusterAutoscalerLease string
	StatusLayout           string

	// Parsed by Validate.
	CALeaseNamespace, CALeaseName string
}

// DefaultCoexistOptions watch Cluster Autoscaler's default Lease
// (--namespace=kube-system, --leader-elect-resource-name=cluster-autoscaler).
func DefaultCoexistOptions() CoexistOptions {
	return CoexistOptions{ClusterAutoscalerLease: "kube-system/cluster-autoscaler", StatusLayout: StatusLayoutTidal}
}

// AddFlags registers the options.
func (o *CoexistOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ClusterAutoscalerLease, "cluster-autoscaler-lease", o.ClusterAutoscalerLease,
		"NAMESPACE/NAME of Cluster Autoscaler's leader Lease: while a holder keeps renewing it, the node loop does not scale, so the two never act on the same nodes. Empty turns the check off.")
	fs.StringVar(&o.StatusLayout, "status-config-map-layout", o.StatusLayout,
		"Layout of the status ConfigMap: tidal, or cluster-autoscaler (Cluster Autoscaler's status YAML and last-updated annotation, for scripts that read it).")
}

// Validate checks the options and fills the parsed fields.
func (o *CoexistOptions) Validate() error {
	var errs []error
	o.CALeaseNamespace, o.CALeaseName = "", ""
	if o.ClusterAutoscalerLease != "" {
		ns, name, ok := strings.Cut(o.ClusterAutoscalerLease, "/")
		if !ok {
			errs = append(errs, fmt.Errorf("--cluster-autoscaler-lease=%q: want NAMESPACE/NAME, such as kube-system/cluster-autoscaler", o.ClusterAutoscalerLease))
		} else {
			errs = append(errs, objectName("--cluster-autoscaler-lease namespace", ns, "namespace", true),
				objectName("--cluster-autoscaler-lease name", name, "Lease", false))
			o.CALeaseNamespace, o.CALeaseName = ns, name
		}
	}
	if o.StatusLayout != StatusLayoutTidal && o.StatusLayout != StatusLayoutClusterAutoscaler {
		errs = append(errs, fmt.Errorf("--status-config-map-layout=%q: want %q or %q", o.StatusLayout, StatusLayoutTidal, StatusLayoutClusterAutoscaler))
	}
	return errors.Join(errs...)
}
