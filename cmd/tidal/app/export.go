package app

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/tidal-autoscaler/tidal/config"
)

// AddFlags adds every flag of tidal to fs (its options, and klog's -v and
// -vmodule), for commands that run tidal with more around it, like
// tidal-local.
func AddFlags(fs *pflag.FlagSet, opts *config.Options) {
	opts.AddFlags(fs)
	addKlogFlags(fs)
}

// SignalContext ends on SIGTERM or SIGINT, as tidal's own command does.
func SignalContext() (context.Context, context.CancelFunc) { return signalContext() }
