// Package app builds the tidal command: flags, wiring of clients, cloud
// provider and loops, leader election and the HTTP endpoints (`tidal local`
// is the tidal-local binary, cmd/tidal-local).
package app

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/config"
)

// NewCommand returns the tidal command with its `local` subcommand.
func NewCommand() *cobra.Command {
	opts := config.NewOptions()
	cmd := &cobra.Command{
		Use:           "tidal",
		Short:         "Kubernetes autoscaler: pods and nodes in one loop pair",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Validate(); err != nil {
				return err
			}
			ctx, stop := signalContext()
			defer stop()
			return Run(ctx, opts)
		},
	}
	fs := cmd.PersistentFlags()
	opts.AddFlags(fs)
	addKlogFlags(fs)
	cmd.AddCommand(newLocalStub())
	return cmd
}

// addKlogFlags adds klog's -v and -vmodule without touching the global
// flag.CommandLine that Kubernetes packages fill.
func addKlogFlags(fs *pflag.FlagSet) {
	gfs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(gfs)
	for _, name := range []string{"v", "vmodule"} {
		fs.AddGoFlag(gfs.Lookup(name))
	}
}

// signalContext ends on SIGTERM or SIGINT.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
