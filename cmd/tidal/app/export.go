package app

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	cliflag "k8s.io/component-base/cli/flag"
	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
	"github.com/tidal-autoscaler/tidal/config"
)

// AddFlags adds every flag of tidal to cmd (its options and Kubernetes'
// logging flags, spelt with '-' or '_' as tidal takes them), for commands
// that run tidal with more around it, like tidal-local. It returns the
// logging configuration the flags fill, for ApplyLogging.
func AddFlags(cmd *cobra.Command, opts *config.Options) *logsapi.LoggingConfiguration {
	logging := logsapi.NewLoggingConfiguration()
	cmd.SetGlobalNormalizationFunc(cliflag.WordSepNormalizeFunc)
	opts.AddFlags(cmd.Flags())
	addLoggingFlags(cmd.Flags(), logging)
	return logging
}

// ApplyLogging validates the logging flags and sets up logging as tidal's
// own command does.
func ApplyLogging(c *logsapi.LoggingConfiguration) error {
	if err := validateLogging(c); err != nil {
		return err
	}
	return applyLogging(c)
}

// SignalContext ends on SIGTERM or SIGINT, as tidal's own command does.
func SignalContext() (context.Context, context.CancelFunc) { return signalContext() }

// StartLocalCloud makes and starts the local cloud of opts
// (--local-node-groups, --nodes) as --cloud-provider=local does, for
// commands that serve it themselves, like tidal-local over externalgrpc.
func StartLocalCloud(ctx context.Context, client kubernetes.Interface, opts *config.Options) (*local.Cloud, error) {
	return buildLocalCloud(ctx, client, opts)
}
