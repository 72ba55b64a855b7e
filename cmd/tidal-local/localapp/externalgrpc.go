package localapp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tidal-autoscaler/tidal/cloudprovider/externalgrpc"
	"github.com/tidal-autoscaler/tidal/cloudprovider/externalgrpc/server"
	"github.com/tidal-autoscaler/tidal/cmd/tidal/app"
	"github.com/tidal-autoscaler/tidal/config"
)

// serveLocalCloud starts the local cloud and serves it over the
// externalgrpc protocol on a loopback port with mutual TLS (certificates of
// a new CA in dir), and points opts at it: tidal then reaches the local
// cloud as it would any Cluster Autoscaler provider server. The server
// stops when ctx ends; wait waits for that. port pins its port (0: a free
// one). The server prices a bound pod by its Node, read from client.
func serveLocalCloud(ctx context.Context, client kubernetes.Interface, opts *config.Options, dir string, port int) (wait func() error, err error) {
	cloud, err := app.StartLocalCloud(ctx, client, opts)
	if err != nil {
		return nil, err
	}
	dir = filepath.Join(dir, "externalgrpc")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("externalgrpc: %w", err)
	}
	lookup := func(ctx context.Context, name string) (*corev1.Node, error) {
		return client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	}
	lb, err := server.StartLoopbackWith(ctx, cloud, dir, externalgrpc.DefaultTimeout,
		server.LoopbackConfig{Port: port, Server: []server.Option{server.WithNodeLookup(lookup)}})
	if err != nil {
		return nil, err
	}
	opts.CloudProvider, opts.CloudConfig = config.CloudProviderExternalGRPC, lb.CloudConfig
	opts.LocalNodeGroups, opts.NodeGroupFlags, opts.NodeGroups = "", nil, nil
	return lb.Wait, nil
}
