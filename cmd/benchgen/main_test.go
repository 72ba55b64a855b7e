package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunRejectsBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string // substrings of the error output
	}{
		{"unknown size", []string{"-size", "S9"}, []string{`unknown -size "S9"`, "S1, S2, S3, S4, S5"}},
		{"unknown format", []string{"-format", "json"}, []string{`unknown -format "json"`, "canonical, yaml"}},
		{"positional argument", []string{"-size", "S1", "extra"}, []string{`unexpected argument "extra"`}},
		{"empty output", []string{"-o", ""}, []string{"-o must not be empty"}},
		{"stored canonical", []string{"-stored"}, []string{"-stored needs -format yaml"}},
		{"unknown flag", []string{"-bogus"}, []string{"-bogus"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tt.args, &stdout, &stderr); code != exitUsage {
				t.Errorf("exit code %d, want %d", code, exitUsage)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr %q does not mention %q", stderr.String(), w)
				}
			}
			if stdout.Len() != 0 {
				t.Errorf("wrote %d bytes to stdout", stdout.Len())
			}
		})
	}
}

func TestRunHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-h"}, &stdout, &stderr); code != exitOK {
		t.Errorf("-h: exit code %d, want 0", code)
	}
	if !strings.Contains(stderr.String(), "usage: benchgen") {
		t.Errorf("-h printed %q", stderr.String())
	}
}

func TestRunCanonicalToStdout(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-size", "s1"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit code %d: %s", code, stderr.String())
	}
	sum := sha256.Sum256(stdout.Bytes())
	if got, want := hex.EncodeToString(sum[:]), "b96ca07244ddf059663087fb5818583ab89171a97e21529103b1d5cdf5b8a502"; got != want {
		t.Errorf("S1 canonical sha256 = %s, want %s", got, want)
	}
}

func TestRunYAMLToFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s1.yaml")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-size", "S1", "-format", "yaml", "-o", path}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit code %d: %s", code, stderr.String())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("# cabench-gen v1 seed=42 N=100")) || !bytes.Contains(data, []byte("\nkind: List\nitems:\n- kind: Node\n")) {
		t.Errorf("unexpected YAML start: %.200q", data)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("output directory holds %d entries, want only the output file", len(entries))
	}
}

func TestRunReportsOutputErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing-dir", "out.txt")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-o", path}, &stdout, &stderr); code != exitError {
		t.Errorf("exit code %d, want %d", code, exitError)
	}
	if !strings.Contains(stderr.String(), "missing-dir") {
		t.Errorf("stderr %q does not name the path", stderr.String())
	}
}

func TestRunStoredYAML(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-size", "S1", "-format", "yaml", "-stored"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit code %d: %s", code, stderr.String())
	}
	for _, want := range []string{"kube-api-access-", "tolerationSeconds: 300", "managedFields:", "phase: Running"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stored YAML lacks %q", want)
		}
	}
}
