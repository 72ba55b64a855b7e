package app

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/local"
	"github.com/tidal-autoscaler/tidal/config"
)

// buildCloudProvider makes and starts the provider --cloud-provider names.
func buildCloudProvider(ctx context.Context, env *loopEnv, opts *config.Options) (cloudprovider.CloudProvider, error) {
	switch opts.CloudProvider {
	case config.CloudProviderLocal:
		if env.seams.localCloudGuard {
			if err := checkLocalCloudCluster(ctx, env.client); err != nil {
				return nil, err
			}
		}
		client, err := localCloudClient(env)
		if err != nil {
			return nil, err
		}
		return buildLocalCloud(ctx, client, opts)
	case config.CloudProviderAWS:
		return buildAWSCloud(ctx, env.client, opts, env.seams.awsClients)
	case config.CloudProviderExternalGRPC:
		return buildExternalGRPCCloud(ctx, opts)
	}
	return nil, fmt.Errorf("--cloud-provider=%q: unknown provider", opts.CloudProvider)
}

// withLocalCloudGuard makes Run refuse to start the local cloud in a
// cluster that has nodes it did not create: its fake Nodes would join a
// real cluster and stay there after tidal exits.
func withLocalCloudGuard() Option {
	return func(s *seams) { s.localCloudGuard = true }
}

// checkLocalCloudCluster fails when the cluster has a node the local cloud
// did not create.
func checkLocalCloudCluster(ctx context.Context, client kubernetes.Interface) error {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("--cloud-provider=local: list nodes to check the cluster is the local cloud's: %w", err)
	}
	if foreign := foreignNodes(nodes.Items); len(foreign) > 0 {
		return fmt.Errorf("--cloud-provider=local: the cluster has %d node(s) the local cloud did not create (%s): "+
			"the local cloud adds simulated Nodes and is only for its own clusters, such as tidal-local's; "+
			"use --cloud-provider=aws for a real cluster", len(foreign), strings.Join(foreign, ", "))
	}
	return nil
}

// foreignNodes names, at most three, the nodes without a local providerID.
func foreignNodes(nodes []corev1.Node) []string {
	var out []string
	for _, n := range nodes {
		if !strings.HasPrefix(n.Spec.ProviderID, local.ProviderIDPrefix) {
			out = append(out, n.Name)
		}
	}
	if len(out) > 3 {
		out = append(out[:3], "...")
	}
	return out
}

// localCloudClient is the client of WithLocalCloudClient, or else a client of
// tidal's configuration with an API budget of its own, as a real cloud's
// calls do not spend tidal's.
func localCloudClient(env *loopEnv) (kubernetes.Interface, error) {
	if c := env.seams.localCloudClient; c != nil {
		return c, nil
	}
	cfg := BuiltinClientConfig(env.restConfig, env.opts.KubeAPIContentType)
	cfg.QPS, cfg.Burst = localCloudQPS, 2*localCloudQPS
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("local cloud: kubernetes client: %w", err)
	}
	return client, nil
}

// localCloudQPS is the local cloud's own API budget.
const localCloudQPS = 50

func buildLocalCloud(ctx context.Context, client kubernetes.Interface, opts *config.Options) (*local.Cloud, error) {
	cloud, err := newLocalCloud(client, opts)
	if err != nil {
		return nil, err
	}
	if opts.DryRun {
		// A shadow's local cloud only reads the nodes: it launches none.
		if err := cloud.Refresh(ctx); err != nil {
			return nil, fmt.Errorf("local cloud: %w", err)
		}
		return cloud, nil
	}
	if err := cloud.Start(ctx); err != nil {
		return nil, fmt.Errorf("start local cloud: %w", err)
	}
	return cloud, nil
}

// newLocalCloud is the local cloud of the flags, not started: it launches
// nothing and learns its nodes from the cluster at each Refresh.
func newLocalCloud(client kubernetes.Interface, opts *config.Options) (*local.Cloud, error) {
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
	return cloud, nil
}
