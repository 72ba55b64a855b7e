// Package expander chooses which node group to grow when several could help
// the pending pods.
package expander

import (
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
)

// Option is one possible scale-up: add NodeCount nodes to NodeGroup, which
// makes Pods schedulable.
type Option struct {
	NodeGroup string
	NodeCount int
	Pods      []*corev1.Pod
	// Template is the group's template node.
	Template *corev1.Node
}

// Strategy keeps the options it likes best. It never returns an empty list
// for a non-empty input.
type Strategy interface {
	BestOptions(options []Option) []Option
}

// Random keeps one option, chosen uniformly.
type Random struct{ Rand *rand.Rand }

// BestOptions implements Strategy.
func (r Random) BestOptions(options []Option) []Option {
	if len(options) <= 1 {
		return options
	}
	return []Option{options[r.Rand.IntN(len(options))]}
}
