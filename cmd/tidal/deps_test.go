package main

import (
	"os/exec"
	"strings"
	"testing"
)

// controlPlane are the import path prefixes of the embedded control plane
// of tidal-local: the production binary must link none of them.
var controlPlane = []string{
	"github.com/tidal-autoscaler/tidal/localcluster",
	"k8s.io/kubernetes/cmd/",
	"k8s.io/kubernetes/pkg/controlplane",
	"k8s.io/kubernetes/pkg/kubelet",
	"k8s.io/apiserver/pkg/server",
	"k8s.io/apiextensions-apiserver/pkg/apiserver",
	"k8s.io/kube-aggregator",
	"go.etcd.io/etcd/server",
	"sigs.k8s.io/kwok",
	"github.com/google/cadvisor",
}

// The production binary's package graph holds no part of the embedded
// control plane, while tidal-local's holds every one (so that a misspelt
// prefix cannot make the check pass).
func TestProductionBinaryLinksNoControlPlane(t *testing.T) {
	prod := deps(t, "github.com/tidal-autoscaler/tidal/cmd/tidal")
	local := deps(t, "github.com/tidal-autoscaler/tidal/cmd/tidal-local")
	for _, prefix := range controlPlane {
		if p := firstWithPrefix(prod, prefix); p != "" {
			t.Errorf("cmd/tidal depends on %s (%s*): the control plane belongs in cmd/tidal-local only; "+
				"`go list -deps` and `go mod why` show the path", p, prefix)
		}
		if firstWithPrefix(local, prefix) == "" {
			t.Errorf("cmd/tidal-local does not depend on %s*: the prefix is wrong or the list is stale", prefix)
		}
	}
}

// deps is `go list -deps pkg`: every package pkg's binary links.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkg).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, msg)
	}
	return strings.Fields(string(out))
}

func firstWithPrefix(pkgs []string, prefix string) string {
	for _, p := range pkgs {
		if strings.HasPrefix(p, prefix) {
			return p
		}
	}
	return ""
}
