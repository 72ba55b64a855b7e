package app

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
	"github.com/tidal-autoscaler/tidal/config"
)

// buildCloudProvider makes and starts the provider --cloud-provider names.
func buildCloudProvider(ctx context.Context, client kubernetes.Interface, opts *config.Options) (cloudprovider.CloudProvider, error) {
	switch opts.CloudProvider {
	case config.CloudProviderLocal:
		return buildLocalCloud(ctx, client, opts)
	case config.CloudProviderAWS:
		return buildAWSCloud(ctx, client, opts)
	}
	return nil, fmt.Errorf("--cloud-provider=%q: unknown provider", opts.CloudProvider)
}

func buildLocalCloud(ctx context.Context, client kubernetes.Interface, opts *config.Options) (*local.Cloud, error) {
	cfg, err := local.LoadConfig(opts.LocalNodeGroups)
	if err != nil {
		return nil, err
	}
	if err := cfg.ApplyNodeGroupFlags(opts.NodeGroups); err != nil {
		return nil, err
	}
	cloud, err := local.New(client, cfg)
	if err != nil {
		return nil, fmt.Errorf("local cloud: %w", err)
	}
	if err := cloud.Start(ctx); err != nil {
		return nil, fmt.Errorf("start local cloud: %w", err)
	}
	return cloud, nil
}
