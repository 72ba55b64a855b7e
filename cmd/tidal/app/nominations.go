package app

import (
	"context"
	"strconv"
	"strings"

	"k8s.io/client-go/discovery"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/config"
)

// minNominationMinor is the first Kubernetes 1.x release whose scheduler
// follows a nomination an autoscaler sets (NominatedNodeNameForExpectation,
// beta and on by default since 1.35).
const minNominationMinor = 35

// nominate says whether to nominate planned pods: --nominate-planned-pods,
// unless the API server is older than 1.35 or its version cannot be read
// (on such a cluster the scheduler does not follow a nomination it did not
// make).
func nominate(ctx context.Context, d discovery.ServerVersionInterface, opts *config.Options) bool {
	if !opts.ScaleUp.NominatePlannedPods {
		return false
	}
	v, err := d.ServerVersion()
	if err != nil {
		klog.FromContext(ctx).Error(err, "Cannot read the API server's version; not nominating planned pods (--nominate-planned-pods)")
		return false
	}
	if !supportsNominations(v.Major, v.Minor) {
		klog.FromContext(ctx).Info("The API server is older than 1.35: its scheduler does not follow nominations; not nominating planned pods",
			"version", v.GitVersion)
		return false
	}
	return true
}

// supportsNominations reads a server's major and minor version (a minor
// such as "35+" as some providers report it).
func supportsNominations(major, minor string) bool {
	ma, err := strconv.Atoi(major)
	if err != nil {
		return false
	}
	mi, err := strconv.Atoi(strings.TrimRight(minor, "+"))
	if err != nil {
		return false
	}
	return ma > 1 || ma == 1 && mi >= minNominationMinor
}
