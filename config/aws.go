package config

import "github.com/spf13/pflag"

// AWSOptions are the flags of --cloud-provider=aws.
type AWSOptions struct{}

// AddFlags registers the AWS flags.
func (o *AWSOptions) AddFlags(fs *pflag.FlagSet) {}

// Validate checks the AWS flags; cloudProvider is the chosen provider.
func (o *AWSOptions) Validate(cloudProvider string) error { return nil }
