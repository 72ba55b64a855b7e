// Package bench times tidal's node loop end to end on a bench-gen cluster
// loaded into a real control plane (localcluster): pods are created through
// the API server, so defaulting and admission (ServiceAccount included) run
// on them, and tidal reads them through its own informers. The benchmarks
// run under `make bench` (go test -bench), never under `make test`, which
// runs only the test that checks benchgen's stored form against the API
// server.
package bench

import (
	"testing"

	"github.com/tidal-autoscaler/tidal/localcluster"
	"github.com/tidal-autoscaler/tidal/test/testenv"
)

var cluster *localcluster.Cluster

// clusterOptions: the ServiceAccount admission plugin and controller on, as
// in a real cluster; the ReplicaSet controller off, because the loader
// creates the ReplicaSets' pods itself (with the pods bound, as the
// scheduler would have bound them); pod GC off, because the loader creates
// the running pods before their nodes (so that the simulated kubelets find
// them running and leave them alone), which pod GC would take for orphans.
var clusterOptions = localcluster.Options{
	ServiceAccounts:     true,
	DisabledControllers: []string{"replicaset", "podgc"},
}

func TestMain(m *testing.M) {
	testenv.MainWith(m, clusterOptions, func(c *localcluster.Cluster) { cluster = c })
}
