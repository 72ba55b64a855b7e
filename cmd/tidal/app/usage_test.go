package app

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/tidal-autoscaler/tidal/config"
)

// --help lists tidal's flags, then CA's, logging and the feature gates,
// each flag once and in its own section.
func TestHelpIsGrouped(t *testing.T) {
	cmd := newCommand(func(*cobra.Command, *config.Options, *logsapi.LoggingConfiguration) error { return nil })
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	help := out.String()
	titles := []string{"tidal's flags:", "Cluster Autoscaler's flags, with CA's meaning", "Logging flags", "Feature gates:"}
	at := -1
	for _, title := range titles {
		i := strings.Index(help, "\n"+title)
		if i < at {
			t.Fatalf("section %q missing or out of order in:\n%s", title, help)
		}
		at = i
	}
	section := func(flag string) string {
		i := strings.Index(help, "\n      --"+flag+" ")
		if i < 0 {
			return ""
		}
		title := ""
		for _, s := range titles {
			if j := strings.Index(help, "\n"+s); j >= 0 && j < i {
				title = s
			}
		}
		return title
	}
	for flag, want := range map[string]string{
		"provision-ahead": titles[0], "dry-run": titles[0], "version": titles[0],
		"nodes": titles[1], "scan-interval": titles[1], "expander": titles[1],
		"logging-format": titles[2], "add-dir-header": titles[2], "stderrthreshold": titles[2],
		"feature-gates": titles[3],
	} {
		if got := section(flag); got != want {
			t.Errorf("--%s in section %q, want %q", flag, got, want)
		}
	}
	// Each flag once; CA's flags without effect not at all.
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  (?:-\w, |    )--([a-z0-9-]+)`).FindAllStringSubmatch(help, -1) {
		if seen[m[1]] {
			t.Errorf("--%s listed twice", m[1])
		}
		seen[m[1]] = true
	}
	if len(seen) < 100 {
		t.Errorf("%d flags listed: the check read the wrong lines", len(seen))
	}
	if section("enable-provisioning-requests") != "" || !strings.Contains(help, "docs/ca-flags.md") {
		t.Errorf("accepted CA flags without effect are listed, or the pointer to their list is missing")
	}
}

func TestDidYouMean(t *testing.T) {
	for args, want := range map[string]string{
		"--scan-intervl=1s":                   "unknown flag: --scan-intervl; did you mean --scan-interval?",
		"--max-nodes-totl=3":                  "did you mean --max-nodes-total?",
		"explian":                             `unknown command "explian" for "tidal"; did you mean explain?`,
		"simulte":                             "did you mean simulate?",
		"explain pod --form-file=f.yaml ns/p": "did you mean --from-file",
		"--zzzzzz":                            "unknown flag: --zzzzzz",
	} {
		cmd := newCommand(func(*cobra.Command, *config.Options, *logsapi.LoggingConfiguration) error { return nil })
		cmd.SetArgs(strings.Fields(args))
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("tidal %s: %v, want %q", args, err, want)
		}
		if args == "--zzzzzz" && err != nil && strings.Contains(err.Error(), "did you mean") {
			t.Errorf("tidal %s: %v suggests a flag far from it", args, err)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"scan-intervl", "scan-interval", 1}, {"explian", "explain", 2}} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
