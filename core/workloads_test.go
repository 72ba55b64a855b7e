package core

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A rescale of a Deployment the informers have is provisioned ahead from
// its pod template; one of a kind without a template, or of a workload the
// informers lack, pictures nothing; a scale-down forgets.
func TestRescaledResolvesTheTargetsTemplate(t *testing.T) {
	a := newAheadLoop(true)
	w := webWorkload()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1"},
		Spec: appsv1.DeploymentSpec{Template: *w.Template, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	if err := a.deployments.Add(d); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a.Rescaled(ctx, "ns", autoscalingv2.CrossVersionObjectReference{Kind: "CronJob", Name: "web"}, 1, 4, autoscalerRef)
	a.Rescaled(ctx, "ns", autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "gone"}, 1, 4, autoscalerRef)
	if got := a.d.observer.aheadPods(a.clock.Now()); len(got) != 0 {
		t.Fatalf("pictured %d pods for targets without a template the informers have, want none", len(got))
	}
	a.Rescaled(ctx, "ns", autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web"}, 1, 4, autoscalerRef)
	if got := a.d.observer.aheadPods(a.clock.Now()); len(got) != 4 {
		t.Fatalf("4 replicas wanted, none exist: pictured %d pods, want 4", len(got))
	}
	a.Rescaled(ctx, "ns", autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web"}, 4, 2, autoscalerRef)
	if got := a.d.observer.aheadPods(a.clock.Now()); len(got) != 0 {
		t.Fatalf("after a scale-down pictured %d pods, want none", len(got))
	}
}
