// Package benchgen generates the synthetic benchmark clusters described in
// docs/bench-cluster.md ("bench-gen v1").
//
// Generate turns a Params (usually one of the presets S1, S2, S3) into plain
// Kubernetes objects: nodes, running pods bound to them, pending pods, the
// ReplicaSets that own every pod, and one NodeGroup per node group with its
// template node. Everything is derived from the seed with integer arithmetic
// and a counter-based SplitMix64, so any implementation of the spec produces
// the very same cluster; WriteCanonical and CanonicalSHA256 give the listing
// and hash that prove it.
package benchgen
