// Package benchgen generates the synthetic benchmark clusters described in
// docs/bench-cluster.md ("bench-gen v1").
//
// Generate turns a Params (usually one of the presets S1 to S5) into plain
// Kubernetes objects: nodes, running pods bound to them, pending pods, the
// ReplicaSets that own every pod, and one NodeGroup per node group with its
// template node. Everything is derived from the seed with integer arithmetic
// and a counter-based SplitMix64, so any implementation of the spec produces
// the very same cluster; WriteCanonical and CanonicalSHA256 give the listing
// and hash that prove it.
//
// Store then turns the plain objects into what an API server stores for
// them (defaults, admission, kubelet and scheduler statuses, UIDs, managed
// fields), and ListerOrder lists objects in the random order a lister
// returns them: tidal's benchmarks run on that, the input a real cluster
// gives. Submitted, Admit, RunningStatus, UnschedulableStatus, RegisterNode
// and ReportNode are the steps of Store, for loading a cluster into a real
// API server.
package benchgen
