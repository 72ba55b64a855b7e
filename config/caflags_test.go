package config

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

var update = flag.Bool("update", false, "rewrite docs/ca-flags.md from the flag table")

// caFAQFlagNames reads the names of Cluster Autoscaler's FAQ table.
func caFAQFlagNames(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("testdata/ca-flag-names.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			names = append(names, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

// The table has every flag of CA's FAQ, once, and nothing else.
func TestCAFlagTableIsCAsFAQ(t *testing.T) {
	want := caFAQFlagNames(t)
	var got []string
	for _, f := range CAFlags() {
		got = append(got, f.Name)
	}
	slices.Sort(want)
	if dup := duplicates(got); len(dup) > 0 {
		t.Errorf("flags listed twice: %v", dup)
	}
	for _, n := range want {
		if !slices.Contains(got, n) {
			t.Errorf("CA's --%s is not in the table", n)
		}
	}
	for _, n := range got {
		if !slices.Contains(want, n) {
			t.Errorf("--%s is in the table but not in CA's FAQ", n)
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
	for _, f := range caLoggingFlags() {
		logging[f.Name] = true
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
		case f.Status == CAFlagAccepted && f.Kind != kindStrings && pf.DefValue != f.Default:
			t.Errorf("--%s default %q, CA's is %q", f.Name, pf.DefValue, f.Default)
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
		case kindStrings:
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
	if want := `allowed-scheduler-names=[a,"b,c"]`; !slices.Contains(set, want) {
		t.Errorf("start-up note %v lacks %q", set, want)
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

func renderCAFlagsDoc() string {
	var b strings.Builder
	b.WriteString(`# Cluster Autoscaler's flags in tidal

tidal accepts every flag of Cluster Autoscaler's FAQ ("What are the parameters to CA?"), so that CA's command lines
and its Helm chart's arguments start tidal unchanged:

- **implemented**: the flag has CA's meaning and default, but where the note says otherwise;
- **accepted**: the flag parses with CA's type and default but has no effect in tidal, for the reason given. It is
  hidden from ` + "`--help`" + `; tidal logs the ones given once at start. A flag set to ask for a feature tidal does not
  implement (ProvisioningRequests, DRA, ` + "`--scheduler-config-file`" + `, drain priorities, the release of kube-system pods,
  GPU limits, ...; config/unsupported.go lists them) gets a Warning log line and a Warning event
  (` + "`FeatureNotImplemented`" + `, on the status ConfigMap) of its own, once, at start.

Where tidal keeps a default apart from CA's on purpose, it logs that at start when the flag was not set.
This file is generated from the table in config/caflags.go (` + "`go test ./config -run TestCAFlagsDoc -update`" + `), and a
test checks the table against CA's list and against tidal's flags.

| Flag | Status | Note |
|---|---|---|
`)
	for _, f := range CAFlags() {
		note := f.Note
		if f.Status == CAFlagAccepted && f.Default != "" && f.Kind != kindStrings {
			note += fmt.Sprintf(" (CA's default %s)", f.Default)
		}
		fmt.Fprintf(&b, "| `--%s` | %s | %s |\n", f.Name, f.Status, note)
	}
	return b.String()
}
