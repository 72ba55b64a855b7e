// Package crd carries the PodAutoscaler CRD manifest of this directory, for
// the programs that install it themselves (tidal-local's demo).
package crd

import _ "embed"

// PodAutoscalers is the PodAutoscaler CRD manifest (YAML).
//
//go:embed autoscaling.tidal.dev_podautoscalers.yaml
var PodAutoscalers []byte
