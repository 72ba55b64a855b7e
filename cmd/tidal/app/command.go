// Package app builds the tidal command: flags, wiring of clients, cloud
// provider and loops, leader election and the HTTP endpoints (`tidal local`
// is the tidal-local binary, cmd/tidal-local).
package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/config"
	"github.com/tidal-autoscaler/tidal/version"
)

// NewCommand returns the tidal command with its `local` subcommand.
func NewCommand() *cobra.Command {
	return newCommand(startTidal)
}

// starter runs tidal with flags that were validated; tests give one that
// stops there.
type starter func(cmd *cobra.Command, opts *config.Options, logging *logsapi.LoggingConfiguration) error

func newCommand(start starter) *cobra.Command {
	opts := config.NewOptions()
	// No silent default: plain `tidal --kubeconfig ...` used to start the
	// local cloud in a real cluster. tidal-local sets its own.
	opts.CloudProvider = ""
	logging := logsapi.NewLoggingConfiguration()
	var showVersion bool
	cmd := &cobra.Command{
		Use:           "tidal",
		Short:         "Kubernetes autoscaler: pods and nodes in one loop pair",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if showVersion {
				fmt.Fprintln(cmd.OutOrStdout(), "tidal", version.Get())
				return nil
			}
			if err := errors.Join(opts.Validate(), validateLogging(logging)); err != nil {
				return err
			}
			return start(cmd, opts, logging)
		},
	}
	// klog's flags are spelt with '_'; Cluster Autoscaler takes them with '-'.
	cmd.SetGlobalNormalizationFunc(cliflag.WordSepNormalizeFunc)
	fs := cmd.PersistentFlags()
	opts.AddFlags(fs)
	addLoggingFlags(fs, logging)
	cmd.Flags().BoolVar(&showVersion, "version", false, "Print tidal's version and exit.")
	cmd.AddCommand(newLocalStub())
	cmd.AddCommand(newExplainCommands(opts, logging)...)
	cmd.SetFlagErrorFunc(FlagError)
	SetGroupedHelp(cmd)
	return cmd
}

// startTidal applies the logging flags, says which flags have no effect,
// and runs tidal until SIGTERM or SIGINT.
func startTidal(cmd *cobra.Command, opts *config.Options, logging *logsapi.LoggingConfiguration) error {
	if err := applyLogging(logging); err != nil {
		return err
	}
	ctx, stop := signalContext()
	defer stop()
	logStartNotes(klog.FromContext(ctx), cmd.Flags())
	return Run(ctx, opts, withLocalCloudGuard(), WithUnsupportedFeatures(config.RequestedUnsupported(cmd.Flags())))
}

// logStartNotes logs, once, the Cluster Autoscaler flags given that have no
// effect in tidal (those that ask for a missing feature get a Warning line
// of their own, from Run), and the defaults tidal keeps apart from CA's
// that were not set.
func logStartNotes(logger klog.Logger, fs *pflag.FlagSet) {
	logger.Info("Starting tidal", "version", version.Get())
	if set := withoutUnsupported(config.AcceptedCAFlagsSet(fs), config.RequestedUnsupported(fs)); len(set) > 0 {
		logger.Info("Cluster Autoscaler flags accepted without effect in tidal (docs/ca-flags.md says why)", "flags", set)
	}
	for _, d := range config.OwnDefaults() {
		if f := fs.Lookup(d.Name); f != nil && !f.Changed {
			logger.Info("Default differs from Cluster Autoscaler's", "flag", "--"+d.Name, "value", f.Value.String(),
				"clusterAutoscaler", d.CADefault, "why", d.Why)
		}
	}
}

// signalContext ends on SIGTERM or SIGINT.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// withoutUnsupported drops from set (name=value) the flags of list.
func withoutUnsupported(set []string, list []config.UnsupportedFeature) []string {
	return slices.DeleteFunc(set, func(nv string) bool {
		name, _, _ := strings.Cut(nv, "=")
		return slices.ContainsFunc(list, func(u config.UnsupportedFeature) bool { return u.Flag == name })
	})
}
