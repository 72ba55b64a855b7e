package app

import (
	"flag"
	"fmt"
	"sync"

	"github.com/spf13/pflag"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // --logging-format=json
	"k8s.io/klog/v2"
)

// loggingGates adds the logging feature gates to Kubernetes' gates once per
// process: the gate set refuses additions after it is bound to a flag set.
var loggingGates = sync.OnceValue(func() error {
	// tidal local and the tests apply the same configuration more than
	// once per process.
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
	return logsapi.AddFeatureGates(utilfeature.DefaultMutableFeatureGate)
})

// addLoggingFlags registers Kubernetes' standard logging flags as Cluster
// Autoscaler does: those of k8s.io/component-base/logs (--logging-format,
// -v, --vmodule, ...) into c, every other klog flag (--logtostderr,
// --stderrthreshold, --log-file, ...) and --feature-gates.
func addLoggingFlags(fs *pflag.FlagSet, c *logsapi.LoggingConfiguration) {
	if err := loggingGates(); err != nil {
		panic(fmt.Sprintf("logging feature gates: %v", err))
	}
	logsapi.AddFlags(c, fs)
	gfs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(gfs)
	// As Cluster Autoscaler: --stderrthreshold is honoured with
	// --logtostderr, and lets everything through unless set higher.
	_ = gfs.Set("legacy_stderr_threshold_behavior", "false")
	_ = gfs.Set("stderrthreshold", "INFO")
	gfs.VisitAll(func(f *flag.Flag) {
		if f.Name != "v" && f.Name != "vmodule" {
			fs.AddGoFlag(f)
		}
	})
	utilfeature.DefaultMutableFeatureGate.AddFlag(fs)
}

// validateLogging checks the logging flags without applying them.
func validateLogging(c *logsapi.LoggingConfiguration) error {
	if errs := logsapi.Validate(c, utilfeature.DefaultFeatureGate, nil); len(errs) > 0 {
		return fmt.Errorf("logging flags: %w", errs.ToAggregate())
	}
	return nil
}

// applyLogging puts the logging flags in force. The text format keeps
// klog's own output, which honours every klog flag (--log-file,
// --stderrthreshold, ...); the others replace it.
func applyLogging(c *logsapi.LoggingConfiguration) error {
	if err := logsapi.ValidateAndApply(c, utilfeature.DefaultFeatureGate); err != nil {
		return fmt.Errorf("logging flags: %w", err)
	}
	if c.Format == logsapi.DefaultLogFormat {
		klog.ClearLogger()
	}
	return nil
}
