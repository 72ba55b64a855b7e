// Command benchgen writes a bench-gen v1 benchmark cluster (see
// docs/bench-cluster.md), either as the canonical listing whose SHA-256 the
// spec tables, or as a Kubernetes YAML List of nodes, ReplicaSets and pods
// that other autoscalers and simulators can load: as generated, or with
// -stored as an API server stores them (what tidal's benchmarks run on).
//
// Usage:
//
//	benchgen [-size S1|S2|S3|S4|S5] [-format canonical|yaml [-stored]] [-o file]
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes of run.
const (
	exitOK    = 0
	exitError = 1 // generation or output failed
	exitUsage = 2 // bad flags
)

// run parses args, generates the cluster and writes it; it returns the exit
// code.
func run(args []string, stdout, stderr io.Writer) int {
	opts, code := parseOptions(args, stderr)
	if code >= 0 {
		return code
	}
	if err := writeCluster(opts, stdout); err != nil {
		fmt.Fprintf(stderr, "benchgen: %v\n", err)
		return exitError
	}
	return exitOK
}
