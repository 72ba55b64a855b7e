package localcluster

import (
	"context"
	"fmt"
	"io"

	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"sigs.k8s.io/kwok/kustomize/stage/node/fast"
	heartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/config"
	"sigs.k8s.io/kwok/pkg/kwok/controllers"
	kwoklog "sigs.k8s.io/kwok/pkg/log"
	kwokclient "sigs.k8s.io/kwok/pkg/utils/client"
)

// FrozenStatusAnnotation, set to "true" on a Node, stops the simulated
// kubelet from touching the node's status and lease, so a test can make a
// node NotReady or unreachable.
const FrozenStatusAnnotation = "localcluster.tidal.dev/frozen-status"

// startKubelets runs kwok as the kubelet of every Node: nodes get Ready
// conditions and heartbeat Leases, bound pods become Running and Ready with
// an IP, and pods being deleted are removed.
func startKubelets(ctx context.Context, kubeconfigPath string, logOut io.Writer) error {
	ctx = kwoklog.NewContext(ctx, kwoklog.NewLogger(logOut, kwoklog.LevelWarn))
	nodeStages, err := parseStages(fast.DefaultNodeInit, heartbeat.DefaultNodeHeartbeatWithLease)
	if err != nil {
		return err
	}
	podStages, err := parseStages(podfast.DefaultPodReady, podfast.DefaultPodComplete, podfast.DefaultPodDelete)
	if err != nil {
		return err
	}
	clients, err := kwokclient.NewClientset("", kubeconfigPath)
	if err != nil {
		return fmt.Errorf("kwok clients: %w", err)
	}
	restConfig, err := clients.ToRESTConfig()
	if err != nil {
		return fmt.Errorf("kwok rest config: %w", err)
	}
	restConfig.QPS, restConfig.Burst = 500, 1000
	typed, err := kubernetes.NewForConfig(withUserAgent(restConfig, "kubelet"))
	if err != nil {
		return fmt.Errorf("kwok typed client: %w", err)
	}
	dynamicClient, err := clients.ToDynamicClient()
	if err != nil {
		return fmt.Errorf("kwok dynamic client: %w", err)
	}
	mapper, err := clients.ToRESTMapper()
	if err != nil {
		return fmt.Errorf("kwok rest mapper: %w", err)
	}
	ctrl, err := controllers.NewController(controllers.Config{
		Clock:                                 clock.RealClock{},
		TypedClient:                           typed,
		DynamicClient:                         dynamicClient,
		RESTMapper:                            mapper,
		ImpersonatingTypedClient:              clients.ToImpersonatingTypedClient(),
		ImpersonatingDynamicClient:            clients.ToImpersonatingDynamicClient(),
		ManageAllNodes:                        true,
		DisregardStatusWithAnnotationSelector: FrozenStatusAnnotation + "=true",
		CIDR:                                  "10.244.0.0/16",
		NodeIP:                                "10.96.0.1",
		LocalStages: map[internalversion.StageResourceRef][]*internalversion.Stage{
			{APIGroup: "v1", Kind: "Node"}: nodeStages,
			{APIGroup: "v1", Kind: "Pod"}:  podStages,
		},
		NodeLeaseDurationSeconds:  40,
		NodeLeaseParallelism:      4,
		NodePlayStageParallelism:  4,
		PodPlayStageParallelism:   8,
		PodsOnNodeSyncParallelism: 4,
		ID:                        "localcluster",
	})
	if err != nil {
		return fmt.Errorf("kwok controller: %w", err)
	}
	if err := ctrl.Start(ctx); err != nil {
		return fmt.Errorf("start kwok: %w", err)
	}
	return nil
}

func parseStages(raws ...string) ([]*internalversion.Stage, error) {
	out := make([]*internalversion.Stage, 0, len(raws))
	for _, raw := range raws {
		s, err := config.UnmarshalWithType[*internalversion.Stage](raw)
		if err != nil {
			return nil, fmt.Errorf("parse kwok stage: %w", err)
		}
		out = append(out, s)
	}
	return out, nil
}
