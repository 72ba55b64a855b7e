package app

import (
	"context"

	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/cloudprovider/externalgrpc"
	"github.com/tidal-autoscaler/tidal/config"
)

// buildExternalGRPCCloud connects to the server --cloud-config names. As in
// Cluster Autoscaler, the node groups and their bounds are the server's:
// --nodes is not used.
func buildExternalGRPCCloud(ctx context.Context, opts *config.Options) (*externalgrpc.Provider, error) {
	cfg, err := externalgrpc.LoadConfig(opts.CloudConfig)
	if err != nil {
		return nil, err
	}
	if len(opts.NodeGroups) > 0 {
		klog.FromContext(ctx).Info("--nodes is not used with --cloud-provider=externalgrpc: the node groups and their sizes are the server's",
			"nodes", opts.NodeGroupFlags)
	}
	klog.FromContext(ctx).Info("Cloud provider externalgrpc", "address", cfg.Address, "tls", cfg.Cert != "", "grpcTimeout", cfg.Timeout)
	return externalgrpc.New(ctx, cfg)
}
