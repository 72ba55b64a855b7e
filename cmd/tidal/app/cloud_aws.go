package app

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/aws"
	"github.com/tidal-autoscaler/tidal/config"
)

// awsEventObject is what the AWS provider's events are about, as Cluster
// Autoscaler writes its events on its status ConfigMap.
const awsEventObject = "tidal-status"

// awsCloud is the AWS provider with the event broadcaster it owns.
type awsCloud struct {
	*aws.Cloud
	broadcaster record.EventBroadcaster
}

// Cleanup stops the provider's event broadcaster.
func (c *awsCloud) Cleanup() error {
	c.broadcaster.Shutdown()
	return c.Cloud.Cleanup()
}

// buildAWSCloud makes the AWS provider: SDK clients from the default
// credential chain, then a first read of the node groups, so that missing
// credentials or a wrong region stop tidal at start. change, when not nil,
// changes the SDK options (WithAWSClientOptions).
func buildAWSCloud(ctx context.Context, client kubernetes.Interface, opts *config.Options, change func(*aws.ClientOptions)) (cloudprovider.CloudProvider, error) {
	cfg, err := awsConfig(opts)
	if err != nil {
		return nil, err
	}
	co := aws.ClientOptions{Region: opts.AWS.Region}
	if change != nil {
		change(&co)
	}
	clients, err := aws.NewClients(ctx, co)
	if err != nil {
		return nil, fmt.Errorf("--cloud-provider=aws: %w", err)
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: ComponentName})
	ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: opts.Namespace, Name: awsEventObject}
	events := func(eventType, reason, message string) { recorder.Event(ref, eventType, reason, message) }

	cloud, err := aws.New(ctx, cfg, clients, aws.WithEvents(events))
	if err != nil {
		broadcaster.Shutdown()
		return nil, fmt.Errorf("--cloud-provider=aws: %w", err)
	}
	return &awsCloud{Cloud: cloud, broadcaster: broadcaster}, nil
}

// awsConfig makes the AWS provider's configuration from validated flags,
// reading the price table file if one is given.
func awsConfig(opts *config.Options) (aws.Config, error) {
	cfg := aws.Config{
		NodeGroups:      opts.NodeGroups,
		RefreshInterval: opts.AWS.RefreshInterval,
		MaxPods:         opts.AWS.MaxPods,
		NodeReservation: opts.AWS.NodeReservation,

		InterruptionQueue: opts.AWS.InterruptionQueue,

		LaunchWatchTimeout: opts.MaxNodeProvisionTime,
		CompareImages:      opts.ReplaceDriftedNodes,
	}
	for _, d := range opts.AWS.NodeGroupAutoDiscovery {
		spec := aws.AutoDiscoverySpec{}
		for _, t := range d.Tags {
			spec.Tags = append(spec.Tags, aws.TagFilter(t))
		}
		cfg.AutoDiscovery = append(cfg.AutoDiscovery, spec)
	}
	if opts.AWS.PriceTable != "" {
		t, err := aws.LoadPriceTable(opts.AWS.PriceTable)
		if err != nil {
			return aws.Config{}, err
		}
		cfg.Prices = t
	}
	return cfg, cfg.Validate()
}
