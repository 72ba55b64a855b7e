package main

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/tidal-autoscaler/tidal/"

// decisionPackages decide from plain data; the shell (core, its actuator
// core/act, the hpa controller, cmd) gathers that data and acts.
var decisionPackages = []string{
	"core/scaleup", "core/scaledown", "core/scalein", "core/templates", "core/clusterstate", "estimator", "expander", "simulator", "hpa",
	"core/nodeschedule", "schedule", "core/consolidate",
}

// Dependencies point one way: cmd → the loops' shells → the decision
// packages → the cloud provider interfaces. A decision package links no
// shell, flag or API type package of tidal and imports no client-go client,
// lister or informer machinery itself (the scheduler framework the
// simulator drives brings client-go along, but the simulator passes it
// no client); the API types link no algorithm; providers link no flags.
func TestDependenciesPointOneWay(t *testing.T) {
	for _, pkg := range decisionPackages {
		for _, dep := range deps(t, module+pkg) {
			if isShell(dep) {
				t.Errorf("decision package %s depends on %s", pkg, dep)
			}
		}
		for _, imp := range imports(t, module+pkg) {
			for _, client := range []string{"k8s.io/client-go/kubernetes", "k8s.io/client-go/listers", "k8s.io/client-go/tools/cache", "k8s.io/client-go/dynamic"} {
				if imp == client || strings.HasPrefix(imp, client+"/") {
					t.Errorf("decision package %s imports %s: pass it data instead", pkg, imp)
				}
			}
		}
	}
	for _, rule := range []struct {
		from, not string
		// exact forbids the package itself, not those under it.
		exact bool
	}{
		{"apis/...", "hpa", false},
		{"cloudprovider/...", "config", false},
		// The node loop takes its options mapped from the flags in cmd.
		{"core/...", "config", false},
		// The actuator returns what happened; it knows no loop, and the
		// loop's events and metrics are a leaf both use.
		{"core/act", "core", true},
		{"core/telemetry", "core", true},
		{"core/telemetry", "core/act", true},
		// The pod loop is given the node loop's views (capacity, scale-in)
		// as plain functions and data; it links no node-loop shell.
		{"hpa/...", "core", true},
		{"hpa/...", "core/act", true},
		{"hpa/...", "core/telemetry", true},
	} {
		for _, dep := range deps(t, module+rule.from) {
			if dep == module+rule.not || !rule.exact && strings.HasPrefix(dep, module+rule.not+"/") {
				t.Errorf("%s depends on %s", rule.from, dep)
			}
		}
	}
}

// imports are the packages pkg imports itself.
func imports(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// isShell reports whether dep is one of tidal's shell, flag, API type or
// provider packages.
func isShell(dep string) bool {
	switch strings.TrimPrefix(dep, module) {
	case "core", "core/act", "core/telemetry", "config", "hpa/controller":
		return true
	}
	for _, prefix := range []string{"apis/", "cmd/", "cloudprovider/aws", "cloudprovider/externalgrpc", "cloudprovider/local"} {
		if strings.HasPrefix(dep, module+prefix) {
			return true
		}
	}
	return false
}
