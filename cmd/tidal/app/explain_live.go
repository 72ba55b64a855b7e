package app

import (
	"context"
	"fmt"
	"net/http"

	"k8s.io/client-go/kubernetes"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/config"
	"github.com/tidal-autoscaler/tidal/explain"
)

// liveSource is the cluster of --kubeconfig, read only: its client's
// transport refuses every request but reads, and its cloud refuses every
// change.
func liveSource(ctx context.Context, opts *config.Options) (explain.Source, error) {
	cfg, err := restConfig(opts)
	if err != nil {
		return explain.Source{}, err
	}
	cfg.Wrap(refuseWrites)
	client, err := kubernetes.NewForConfig(BuiltinClientConfig(cfg, opts.KubeAPIContentType))
	if err != nil {
		return explain.Source{}, fmt.Errorf("kubernetes client: %w", err)
	}
	cloud, err := describingCloud(ctx, client, opts)
	if err != nil {
		return explain.Source{}, err
	}
	return explain.Source{Client: client, Factory: NewInformerFactory(client), Cloud: cloudprovider.DryRun(cloud, nil)}, nil
}

// describingCloud is the provider of --cloud-provider, built to describe
// the node groups only: the local cloud is not started (it learns its
// nodes from the cluster at each Refresh) and so launches nothing.
func describingCloud(ctx context.Context, client kubernetes.Interface, opts *config.Options) (cloudprovider.CloudProvider, error) {
	switch opts.CloudProvider {
	case config.CloudProviderLocal:
		return newLocalCloud(client, opts)
	case config.CloudProviderAWS:
		return buildAWSCloud(ctx, client, opts, nil)
	case config.CloudProviderExternalGRPC:
		return buildExternalGRPCCloud(ctx, opts)
	}
	return nil, fmt.Errorf("--cloud-provider=%q: unknown provider", opts.CloudProvider)
}

// refuseWrites lets reads through (get, list, watch) and fails every
// other request before it leaves.
func refuseWrites(next http.RoundTripper) http.RoundTripper { return readOnlyTransport{next} }

type readOnlyTransport struct{ next http.RoundTripper }

func (t readOnlyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return t.next.RoundTrip(r)
	}
	return nil, fmt.Errorf("read-only: %s %s refused: tidal explain writes nothing", r.Method, r.URL.Path)
}
