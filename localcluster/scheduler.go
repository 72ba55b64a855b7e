package localcluster

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/profile"
)

// startScheduler runs the real kube-scheduler with its default profile. It
// stops when ctx is done.
func startScheduler(ctx context.Context, cfg *rest.Config) error {
	cs, err := kubernetes.NewForConfig(withUserAgent(cfg, "kube-scheduler"))
	if err != nil {
		return fmt.Errorf("scheduler client: %w", err)
	}
	factory := scheduler.NewInformerFactory(cs, 0)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return fmt.Errorf("scheduler events: %w", err)
	}
	go func() {
		<-ctx.Done()
		broadcaster.Shutdown()
	}()
	sched, err := scheduler.New(ctx, cs, factory, nil, profile.NewRecorderFactory(broadcaster),
		scheduler.WithKubeConfig(cfg),
		scheduler.WithPodInitialBackoffSeconds(1),
		scheduler.WithPodMaxBackoffSeconds(2))
	if err != nil {
		return fmt.Errorf("create kube-scheduler: %w", err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	if err := sched.WaitForHandlersSync(ctx); err != nil {
		return fmt.Errorf("kube-scheduler handlers: %w", err)
	}
	go sched.Run(ctx)
	return nil
}

func withUserAgent(cfg *rest.Config, agent string) *rest.Config {
	c := rest.CopyConfig(cfg)
	rest.AddUserAgent(c, agent)
	return c
}
