package config

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

var update = flag.Bool("update", false, "rewrite docs/ca-flags.md from the flag table")

// caReleaseExtract reads the extract of CARelease's flags hack/catables
// wrote (make ca-tables): name, kind and default of each.
func caReleaseExtract(t *testing.T) []caFlagDef {
	t.Helper()
	data, err := os.ReadFile("testdata/ca-flags.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out []caFlagDef
	for i, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) != 4 {
			t.Fatalf("testdata/ca-flags.txt:%d: %d fields, want 4", i+1, len(fields))
		}
		def, err := strconv.Unquote(fields[2])
		if err != nil {
			t.Fatalf("testdata/ca-flags.txt:%d: default %s: %v", i+1, fields[2], err)
		}
		out = append(out, caFlagDef{Name: fields[0], Kind: fields[1], Default: def, From: fields[3]})
	}
	if !strings.Contains(string(data), CARelease+" ") {
		t.Fatalf("testdata/ca-flags.txt is not of %s: regenerate both with make ca-tables", CARelease)
	}
	return out
}

// The table has every flag of the pinned CA release, once, with CA's kind
// and default, and nothing else; each flag tidal does not implement says
// why. A new release's flag fails here until it is implemented or given a
// reason in caAcceptedReasons.
func TestCAFlagTableIsCARelease(t *testing.T) {
	want := caReleaseExtract(t)
	table := map[string]CAFlag{}
	var got []string
	for _, f := range CAFlags() {
		table[f.Name] = f
		got = append(got, f.Name)
	}
	if dup := duplicates(got); len(dup) > 0 {
		t.Errorf("flags listed twice: %v", dup)
	}
	inRelease := map[string]bool{}
	for _, w := range want {
		inRelease[w.Name] = true
		f, ok := table[w.Name]
		switch {
		case !ok:
			t.Errorf("%s's --%s (%s, default %q) is not in tidal's table", CARelease, w.Name, w.Kind, w.Default)
		case f.Kind != w.Kind || f.Default != w.Default:
			t.Errorf("--%s is a %s defaulting to %q in the table, %s in %s defaulting to %q", w.Name, f.Kind, f.Default, w.Kind, CARelease, w.Default)
		case f.Status == CAFlagAccepted && f.Note == "":
			t.Errorf("%s's --%s is neither implemented (caImplementedFlags) nor given a reason (caAcceptedReasons)", CARelease, w.Name)
		}
	}
	for _, n := range got {
		if !inRelease[n] {
			t.Errorf("--%s is in the table but not a flag of %s", n, CARelease)
		}
	}
	reasons := caAcceptedReasons()
	for n := range caImplementedFlags() {
		if !inRelease[n] {
			t.Errorf("caImplementedFlags lists --%s, not a flag of %s", n, CARelease)
		}
		if _, ok := reasons[n]; ok {
			t.Errorf("--%s is implemented and has a reason for having no effect", n)
		}
	}
	for n := range reasons {
		if !inRelease[n] {
			t.Errorf("caAcceptedReasons lists --%s, not a flag of %s", n, CARelease)
		}
	}
}

func duplicates(names []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range names {
		if seen[n] {
			out = append(out, n)
		}
		seen[n] = true
	}
	return out
}

// Every CA flag but the logging ones (the command adds those) is
// registered by AddFlags; the accepted ones hidden, with CA's default.
func TestCAFlagsAreRegistered(t *testing.T) {
	fs := pflag.NewFlagSet("tidal", pflag.ContinueOnError)
	NewOptions().AddFlags(fs)
	logging := map[string]bool{}
	for _, d := range caReleaseFlags() {
		logging[d.Name] = caLoggingNote(d.From) != ""
	}
	for _, f := range CAFlags() {
		pf := fs.Lookup(f.Name)
		switch {
		case logging[f.Name]:
			continue
		case pf == nil:
			t.Errorf("--%s (%s) is not registered", f.Name, f.Status)
		case f.Status == CAFlagAccepted && !pf.Hidden:
			t.Errorf("--%s has no effect but shows in --help", f.Name)
		case f.Status == CAFlagImplemented && pf.Hidden:
			t.Errorf("--%s is implemented but hidden", f.Name)
		case f.Status == CAFlagAccepted && f.Kind != kindMultiString && pf.DefValue != f.Default:
			t.Errorf("--%s default %q, CA's is %q", f.Name, pf.DefValue, f.Default)
		case !sameKind(f.Kind, pf.Value.Type()):
			t.Errorf("--%s is a %s, CA's a %s: CA's values would not parse alike", f.Name, pf.Value.Type(), f.Kind)
		}
	}
}

// Each accepted flag parses as CA's does (a bare boolean, a repeated list)
// and shows in the start-up note.
func TestAcceptedCAFlagsParse(t *testing.T) {
	args := []string{}
	for _, f := range caAcceptedFlags() {
		switch f.Kind {
		case kindBool:
			args = append(args, "--"+f.Name)
		case kindMultiString, kindStringSlice:
			args = append(args, "--"+f.Name+"=a", "--"+f.Name+"=b,c")
		case kindString:
			args = append(args, "--"+f.Name+"=x")
		default:
			args = append(args, "--"+f.Name+"="+f.Default)
		}
	}
	fs := pflag.NewFlagSet("tidal", pflag.ContinueOnError)
	NewOptions().AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	set := AcceptedCAFlagsSet(fs)
	if len(set) != len(caAcceptedFlags()) {
		t.Errorf("start-up note lists %d flags, want all %d given: %v", len(set), len(caAcceptedFlags()), set)
	}
	// CA's MultiStringFlag takes each value whole, its string slices split
	// at commas.
	for _, want := range []string{`gpu-total=[a,"b,c"]`, `allowed-scheduler-names=[a,b,c]`} {
		if !slices.Contains(set, want) {
			t.Errorf("start-up note %v lacks %q", set, want)
		}
	}
}

const caFlagsDoc = "../docs/ca-flags.md"

// docs/ca-flags.md is the table (go test ./config -run TestCAFlagsDoc
// -update rewrites it).
func TestCAFlagsDoc(t *testing.T) {
	want := renderCAFlagsDoc()
	if *update {
		if err := os.WriteFile(caFlagsDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(caFlagsDoc)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s is not the flag table; run go test ./config -run TestCAFlagsDoc -update", caFlagsDoc)
	}
}

// sameKind tells whether tidal's flag of pflag type got parses CA's values
// of kind want as CA does. tidal's own types of the same values stand for
// CA's strings.
func sameKind(want, got string) bool {
	switch want {
	case kindMultiString:
		return got == "stringArray"
	case kindInt:
		return got == "int" || got == "int32" || got == "int64"
	case kindFloat:
		return got == "float64" || got == "float32"
	case kindBool, kindDuration, kindStringSlice:
		return got == want
	}
	return true
}

func renderCAFlagsDoc() string {
	var b strings.Builder
	b.WriteString(`# Cluster Autoscaler's flags in tidal

tidal accepts every flag of Cluster Autoscaler ` + "`" + CARelease + "`" + ` (the flags its source registers:
` + "`config/flags/flags.go`" + `, the klog, logging, leader-election and feature-gate flags its ` + "`main.go`" + ` adds, and two
flags a module it links registers), so that CA's command lines and its Helm chart's arguments start tidal unchanged:

- **implemented**: the flag has CA's meaning and default, but where the note says otherwise;
- **accepted**: the flag parses with CA's type and default but has no effect in tidal, for the reason given. It is
  hidden from ` + "`--help`" + `; tidal logs the ones given once at start. A flag set to ask for a feature tidal does not
  implement (ProvisioningRequests, DRA, ` + "`--scheduler-config-file`" + `, drain priorities, the release of kube-system pods,
  GPU limits, ...; config/unsupported.go lists them) gets a Warning log line and a Warning event
  (` + "`FeatureNotImplemented`" + `, on the status ConfigMap) of its own, once, at start.

Where tidal keeps a default apart from CA's on purpose, it logs that at start when the flag was not set.

The list of CA's flags (names, types, defaults) is generated from that release's source by ` + "`hack/catables`" + `
into ` + "`config/caflags_release.go`" + ` and the extract ` + "`config/testdata/ca-flags.txt`" + `; tidal's part is which flags it
implements and why the others have no effect (` + "`config/caflags.go`" + `). To move to another release:

    make ca-tables CA_REF=cluster-autoscaler-1.37.0 CA_COMMIT=<the tag's commit> CA_SRC=<a clone of kubernetes/autoscaler>
    go test ./config ./core/telemetry ./cmd/tidal/app

Without ` + "`CA_SRC`" + ` the generator fetches CA's module at ` + "`CA_COMMIT`" + ` from the Go module proxy. It reads the source as
text and evaluates the defaults' constant expressions itself; CA is never built, nor a dependency of tidal.

` + "`TestCAFlagTableIsCARelease`" + ` then fails for each new flag until it is implemented or given a reason, and
` + "`TestCAMetricFamiliesMatchCA`" + ` for each metric family tidal lacks or has otherwise (docs/metrics.md). This file is
generated from the table (` + "`go test ./config -run TestCAFlagsDoc -update`" + `).

| Flag | Status | Note |
|---|---|---|
`)
	for _, f := range CAFlags() {
		note := f.Note
		if f.Status == CAFlagAccepted && f.Default != "" && f.Default != "[]" {
			note += fmt.Sprintf(" (CA's default %s)", f.Default)
		}
		fmt.Fprintf(&b, "| `--%s` | %s | %s |\n", f.Name, f.Status, note)
	}
	return b.String()
}
