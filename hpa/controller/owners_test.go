package controller

import (
	"errors"
	"fmt"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tidal-autoscaler/tidal/hpa"
	"github.com/tidal-autoscaler/tidal/hpa/metrics"
)

func TestHPAsTargeting(t *testing.T) {
	web := autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	mk := func(name, apiVersion, kind, target string) *autoscalingv2.HorizontalPodAutoscaler {
		return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{
				APIVersion: apiVersion, Kind: kind, Name: target}}}
	}
	for _, tc := range []struct {
		name string
		hpa  *autoscalingv2.HorizontalPodAutoscaler
		want bool
	}{
		{"same target", mk("a", "apps/v1", "Deployment", "web"), true},
		{"another version of the group", mk("a", "apps/v1beta2", "Deployment", "web"), true},
		{"another name", mk("a", "apps/v1", "Deployment", "api"), false},
		{"another kind", mk("a", "apps/v1", "StatefulSet", "web"), false},
		{"another group", mk("a", "example.com/v1", "Deployment", "web"), false},
		{"the core group", mk("a", "v1", "Deployment", "web"), false},
		{"malformed apiVersion", mk("a", "a/b/c", "Deployment", "web"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := HPAsTargeting([]*autoscalingv2.HorizontalPodAutoscaler{tc.hpa}, web)
			if (len(got) == 1) != tc.want {
				t.Fatalf("HPAsTargeting(%s %s/%s) = %v, want a match: %v", tc.hpa.Spec.ScaleTargetRef.APIVersion,
					tc.hpa.Spec.ScaleTargetRef.Kind, tc.hpa.Spec.ScaleTargetRef.Name, got, tc.want)
			}
		})
	}
	got := HPAsTargeting([]*autoscalingv2.HorizontalPodAutoscaler{
		mk("z", "apps/v1", "Deployment", "web"), mk("b", "apps/v1", "Deployment", "api"), mk("a", "apps/v1", "Deployment", "web")}, web)
	if fmt.Sprint(got) != "[HorizontalPodAutoscaler/a HorizontalPodAutoscaler/z]" {
		t.Fatalf("HPAsTargeting = %v, want both HPAs of web, sorted", got)
	}
}

// A PodAutoscaler whose target an HPA also drives is not scaled: it says
// AmbiguousOwner in ScalingActive and in a warning, and scales again once
// the HPA is gone. When the other autoscalers cannot be listed, it is not
// scaled either.
func TestAmbiguousOwnerHoldsTheTarget(t *testing.T) {
	h := newHarness(t, hpa.DefaultConfig())
	h.deployment("ns", "web", 2)
	h.addPA(cpuPA("ns", "web", 50, 1, 10))
	h.sim.Set("cpu", metrics.Constant(0.2)) // 100%: 4 replicas wanted
	var others []string
	var listErr error
	h.c.cfg.OtherAutoscalers = func(ns string, ref autoscalingv2.CrossVersionObjectReference) ([]string, error) {
		if ns != "ns" || ref.Name != "web" {
			t.Errorf("asked for others of %s/%s", ns, ref.Name)
		}
		return others, listErr
	}

	others = []string{"HorizontalPodAutoscaler/web"}
	h.sync("ns/web")
	if got := h.scales.replicas("ns", "web"); got != 2 {
		t.Fatalf("replicas %d: scaled a target an HPA also drives", got)
	}
	c := condition(h.pa("ns/web").Status.HorizontalPodAutoscalerStatus, autoscalingv2.ScalingActive)
	want := "Deployment/ns/web is also the scale target of HorizontalPodAutoscaler/web"
	if c.Status != corev1.ConditionFalse || c.Reason != ReasonAmbiguousOwner || !hasEvent([]string{c.Message}, want) {
		t.Fatalf("ScalingActive %+v, want False, %s, %q", c, ReasonAmbiguousOwner, want)
	}
	if ev := h.events(); !hasEvent(ev, "Warning AmbiguousOwner "+want) {
		t.Fatalf("events %q, want a warning %q", ev, want)
	}

	others, listErr = nil, errors.New("cache gone")
	if _, err := h.c.Sync(quiet(), "ns/web"); err == nil || h.scales.replicas("ns", "web") != 2 {
		t.Fatalf("sync error %v, replicas %d: want an error and no scaling when the others cannot be listed",
			err, h.scales.replicas("ns", "web"))
	}

	listErr = nil
	h.sync("ns/web")
	if got := h.scales.replicas("ns", "web"); got != 4 {
		t.Fatalf("replicas %d, want 4 once the HPA is gone", got)
	}
	if c := condition(h.pa("ns/web").Status.HorizontalPodAutoscalerStatus, autoscalingv2.ScalingActive); c.Reason == ReasonAmbiguousOwner {
		t.Fatalf("ScalingActive still %+v", c)
	}
}
