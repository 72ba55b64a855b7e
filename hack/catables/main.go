// Command catables writes tidal's tables of Cluster Autoscaler's flags and
// metric families from the source of one CA release: config's generated
// flag list (caflags_release.go) and the extracts the tests compare tidal
// with (config/testdata/ca-flags.txt, core/telemetry/testdata/ca-metrics.txt).
// It reads CA's source as text and evaluates the constant expressions of
// its defaults and buckets itself; CA's module is never built or imported.
//
//	go run ./hack/catables -ref cluster-autoscaler-1.36.1 -src DIR     # a git clone of kubernetes/autoscaler
//	go run ./hack/catables -ref cluster-autoscaler-1.36.1 -commit SHA  # CA's module at the tag's commit, from the module proxy
//
// make ca-tables does one or the other.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"os"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
)

func main() {
	src := flag.String("src", "", "a git clone of kubernetes/autoscaler, read at -ref")
	ref := flag.String("ref", "", "the release tag, e.g. cluster-autoscaler-1.36.1")
	commit := flag.String("commit", "", "the tag's commit: with -src, checked; without, CA's module at it is fetched from the module proxy")
	root := flag.String("root", ".", "tidal's repository")
	flag.Parse()
	if err := run(*src, *ref, *commit, *root); err != nil {
		fmt.Fprintln(os.Stderr, "catables:", err)
		os.Exit(1)
	}
}

func run(srcDir, ref, commit, root string) error {
	var src source
	switch {
	case ref == "":
		return fmt.Errorf("-ref is required")
	case srcDir != "":
		g, err := newGitSource(srcDir, ref)
		if err != nil {
			return err
		}
		if commit != "" && g.commit != commit {
			return fmt.Errorf("%s is commit %s in %s, not %s: a moved tag, or a clone of another repository", ref, g.commit, srcDir, commit)
		}
		src = g
	case commit != "":
		dir, version, err := download(caModule, commit)
		if err != nil {
			return err
		}
		src = dirSource{root: dir, version: ref + " (module version " + version + ")"}
	default:
		return fmt.Errorf("-src or -commit is required")
	}
	release := ref
	l := newLoader(src)
	flags, err := flagsOf(l)
	if err != nil {
		return err
	}
	lib, err := libraryFlags(l)
	if err != nil {
		return err
	}
	deps, err := dependencyFlags(src)
	if err != nil {
		return err
	}
	flags, err = merge(flags, append(lib, deps...))
	if err != nil {
		return err
	}
	metrics, err := metricsOf(l)
	if err != nil {
		return err
	}
	header := fmt.Sprintf("Cluster Autoscaler %s", src.describe())
	if err := checkLibraries(src); err != nil {
		return err
	}
	for path, data := range map[string][]byte{
		root + "/config/caflags_release.go":              flagsGo(release, header, flags),
		root + "/config/testdata/ca-flags.txt":           flagsText(header, flags),
		root + "/core/telemetry/testdata/ca-metrics.txt": metricsText(header, metrics),
	} {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("%s: %d flags, %d metric families\n", header, len(flags), len(metrics))
	return nil
}

// merge adds the libraries' flags to flags.go's; a name registered twice
// is an error, as it is for CA.
func merge(own, lib []caFlag) ([]caFlag, error) {
	out := slices.Clone(own)
	for _, f := range lib {
		if slices.ContainsFunc(out, func(o caFlag) bool { return o.Name == f.Name }) {
			return nil, fmt.Errorf("--%s is registered by flags.go and by %s", f.Name, f.From)
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b caFlag) int { return strings.Compare(a.Name, b.Name) })
	for i := 1; i < len(out); i++ {
		if out[i].Name == out[i-1].Name {
			return nil, fmt.Errorf("--%s is registered twice", out[i].Name)
		}
	}
	return out, nil
}

// checkLibraries stops when CA's release requires other minor versions of
// the libraries whose flags the generator registers itself than tidal's.
func checkLibraries(src source) error {
	gomod, err := src.readFile("go.mod")
	if err != nil {
		return err
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return fmt.Errorf("no build information")
	}
	for _, dep := range info.Deps {
		if dep.Path != "k8s.io/klog/v2" && dep.Path != "k8s.io/component-base" {
			continue
		}
		have := dep.Version
		if dep.Replace != nil {
			have = dep.Replace.Version
		}
		want := requiredVersion(string(gomod), dep.Path)
		if minor(want) != minor(have) {
			return fmt.Errorf("CA requires %s %s, tidal has %s: the library flags would be another release's", dep.Path, want, have)
		}
	}
	return nil
}

func requiredVersion(gomod, path string) string {
	var v string
	re := regexp.MustCompile(`(?m)^\s*(?:replace\s+)?` + regexp.QuoteMeta(path) + `\s+(?:=>\s+\S+\s+)?(v\S+)`)
	for _, m := range re.FindAllStringSubmatch(gomod, -1) {
		v = m[1] // a replace, written after the require, wins
	}
	return v
}

func minor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

func flagsGo(release, header string, flags []caFlag) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by hack/catables from %s. DO NOT EDIT.\n\npackage config\n\n", header)
	fmt.Fprintf(&b, "// CARelease is the Cluster Autoscaler release whose flags tidal accepts\n// (make ca-tables CA_REF=... regenerates this file).\nconst CARelease = %q\n\n", release)
	b.WriteString("// caReleaseFlags are CARelease's flags: name, type (pflag's; multiString\n// is CA's repeatable MultiStringFlag), default, and where CA registers it.\nfunc caReleaseFlags() []caFlagDef {\n\treturn []caFlagDef{\n")
	for _, f := range flags {
		fmt.Fprintf(&b, "\t\t{%q, %q, %q, %q},\n", f.Name, f.Type, f.Default, f.From)
	}
	b.WriteString("\t}\n}\n")
	out, err := format.Source(b.Bytes())
	if err != nil {
		panic(err)
	}
	return out
}

func flagsText(header string, flags []caFlag) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Command-line flags of %s,\n# written by hack/catables (make ca-tables): name, type, default (Go-quoted), where CA registers it.\n", header)
	for _, f := range flags {
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\n", f.Name, f.Type, strconv.Quote(f.Default), f.From)
	}
	return b.Bytes()
}

func metricsText(header string, metrics []caMetric) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Metric families of %s, metrics/metrics.go,\n# written by hack/catables (make ca-tables): name, type, labels, registered (always or\n# per-node-group: with --emit-per-nodegroup-metrics), deprecated in, buckets.\n", header)
	for _, m := range metrics {
		reg := "always"
		if m.PerNodeGroup {
			reg = "per-node-group"
		}
		var buckets []string
		for _, x := range m.Buckets {
			buckets = append(buckets, strconv.FormatFloat(x, 'g', -1, 64))
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\t%s\t%s\n", m.Name, m.Type, orDash(strings.Join(m.Labels, ",")), reg, orDash(m.Deprecated), orDash(strings.Join(buckets, ",")))
	}
	return b.Bytes()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
