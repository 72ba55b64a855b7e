package app

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

const (
	demoNamespace = "demo"
	demoApp       = "web"
	demoBase      = 2
	demoSpike     = 10
)

// runDemo plays the demo: a small web Deployment, then a spike in its
// replicas that the existing node cannot hold, so the node loop adds nodes.
func runDemo(ctx context.Context, client kubernetes.Interface, tl *timeline) {
	if err := playDemo(ctx, client, tl); err != nil && ctx.Err() == nil {
		tl.note("demo stopped: %v", err)
	}
}

func playDemo(ctx context.Context, client kubernetes.Interface, tl *timeline) error {
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: demoNamespace}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace: %w", err)
	}
	if _, err := client.AppsV1().Deployments(demoNamespace).Create(ctx, demoDeployment(demoBase), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create deployment: %w", err)
	}
	tl.note("demo: deployment %s/%s with %d replicas of 1 CPU / 1Gi", demoNamespace, demoApp, demoBase)
	if err := waitReady(ctx, client, demoBase); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(3 * time.Second):
	}
	spike := time.Now()
	scale, err := client.AppsV1().Deployments(demoNamespace).GetScale(ctx, demoApp, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get scale: %w", err)
	}
	scale.Spec.Replicas = demoSpike
	if _, err := client.AppsV1().Deployments(demoNamespace).UpdateScale(ctx, demoApp, scale, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("scale up: %w", err)
	}
	tl.note("demo: spike, %s scaled to %d replicas: more than the nodes hold", demoApp, demoSpike)
	if err := waitReady(ctx, client, demoSpike); err != nil {
		return err
	}
	tl.note("demo: all %d replicas Ready %.1fs after the spike", demoSpike, time.Since(spike).Seconds())
	return nil
}

func waitReady(ctx context.Context, client kubernetes.Interface, want int32) error {
	return wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		d, err := client.AppsV1().Deployments(demoNamespace).Get(ctx, demoApp, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return d.Status.ReadyReplicas >= want && d.Status.UpdatedReplicas >= want, nil
	})
}

func demoDeployment(replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": demoApp}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: demoApp, Namespace: demoNamespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web", Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
					}},
				}}},
			},
		},
	}
}
