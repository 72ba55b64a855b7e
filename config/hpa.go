package config

import "github.com/spf13/pflag"

// HPAOptions are the pod loop's flags.
type HPAOptions struct{}

// AddFlags registers the pod loop's flags.
func (o *HPAOptions) AddFlags(fs *pflag.FlagSet) {}

// Validate checks the pod loop's flags.
func (o *HPAOptions) Validate() error { return nil }
