// Package v1alpha1 holds the Go types of tidal's PodAutoscaler API
// (autoscaling.tidal.dev/v1alpha1).
//
// A PodAutoscaler carries an autoscaling/v2 HorizontalPodAutoscaler spec
// unchanged, with per-metric dual watermarks added, and its status mirrors the
// HorizontalPodAutoscaler status, plus the stabilization and scale-event
// history tidal keeps across restarts. The CRD manifest in deploy/crd and the
// deep-copy functions are generated from these types by controller-gen,
// whose manifest internal/crdquantity then bounds (see QuantityPattern):
//
//	go generate ./apis/...
//
// +kubebuilder:object:generate=true
// +groupName=autoscaling.tidal.dev
package v1alpha1

//go:generate go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.21.0 object paths=. crd:crdVersions=v1 output:crd:artifacts:config=../../../deploy/crd
//go:generate go run ./internal/crdquantity ../../../deploy/crd/autoscaling.tidal.dev_podautoscalers.yaml
