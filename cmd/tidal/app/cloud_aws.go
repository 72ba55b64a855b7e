package app

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/config"
)

// buildAWSCloud makes the AWS provider.
func buildAWSCloud(ctx context.Context, client kubernetes.Interface, opts *config.Options) (cloudprovider.CloudProvider, error) {
	return nil, fmt.Errorf("--cloud-provider=aws is not available in this build yet")
}
