package app

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tidal-autoscaler/tidal/core"
)

const fixture = "../../../explain/testdata/cluster.yaml"

// run runs the tidal command and returns its output and error.
func run(args ...string) (string, error) {
	cmd := NewCommand()
	var out bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&bytes.Buffer{})
	err := cmd.Execute()
	return out.String(), err
}

// Answers exit 0, whatever they say; bad requests and bad files fail and
// say what was wrong.
func TestExplainCommandAnswersAndErrors(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    string
		wantErr string
	}{
		{args: []string{"explain", "pod", "ml/huge", "--from-file", fixture}, want: "no node group can host it"},
		{args: []string{"explain", "pod", "ml/gone", "--from-file", fixture}, want: "Pod ml/gone not found."},
		{args: []string{"explain", "node", "small-c", "--from-file", fixture, "--nodes=1:4:small", "--node-group-label=eks.amazonaws.com/nodegroup"},
			want: "Node small-c (node group small) can be removed"},
		{args: []string{"explain", "nodegroup", "xlarge", "--from-file", fixture}, want: "Node group xlarge: min 0, max 11, target 1"},
		{args: []string{"simulate", "--from-file", fixture}, want: "Grow xlarge by 1 node(s)"},
		{args: []string{"explain", "pod", "huge", "--from-file", fixture}, wantErr: `pod "huge": want NAMESPACE/NAME`},
		// No --cloud-provider, no --from-file: the missing namespace is
		// named, not the missing provider.
		{args: []string{"explain", "pod", "foo"}, wantErr: `pod "foo": want NAMESPACE/NAME, such as default/foo`},
		{args: []string{"explain", "pod", "a/b/c"}, wantErr: `pod "a/b/c": want NAMESPACE/NAME`},
		{args: []string{"explain", "pod", "ml/huge", "--from-file", "no-such-file.yaml"}, wantErr: "--from-file: open no-such-file.yaml"},
		{args: []string{"explain", "node", "a", "--from-file", fixture, "-o", "xml"}, wantErr: `-o "xml": want text or json`},
		{args: []string{"explain", "node", "a", "--from-file", fixture, "--nodes=0:1:small"}, wantErr: "node group small: the snapshot has 3 of its nodes, more than its maximum size 1"},
		{args: []string{"simulate"}, wantErr: "simulate needs --from-file"},
		{args: []string{"explain", "deployment", "x"}, wantErr: `explain "deployment": want pod NAMESPACE/NAME, node NAME or nodegroup NAME`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, err := run(tc.args...)
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error = %v, want an answer", err)
			case !strings.Contains(out, tc.want):
				t.Fatalf("output:\n%s\nwant it to contain %q", out, tc.want)
			}
		})
	}
}

func TestSimulateJSON(t *testing.T) {
	out, err := run("simulate", "--from-file", fixture, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var d core.Decisions
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("simulate -o json printed no Decisions: %v\n%s", err, out)
	}
	if len(d.ScaleUp.ScaleUps) != 1 || d.ScaleUp.ScaleUps[0].NodeGroup != "xlarge" || len(d.ScaleDown.Unneeded) != 1 {
		t.Errorf("decisions %+v, want xlarge grown and one node unneeded", d)
	}
}

type okTransport struct{ calls int }

func (o *okTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	o.calls++
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
}

// Live explain's client reads and never writes: every other request fails
// before it leaves.
func TestExplainClientRefusesWrites(t *testing.T) {
	next := &okTransport{}
	rt := refuseWrites(next)
	for _, m := range []string{http.MethodGet, http.MethodHead} {
		req, _ := http.NewRequest(m, "https://api/api/v1/pods?watch=true", nil)
		if _, err := rt.RoundTrip(req); err != nil {
			t.Errorf("%s refused: %v", m, err)
		}
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		req, _ := http.NewRequest(m, "https://api/api/v1/namespaces/default/events", nil)
		if _, err := rt.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "read-only") {
			t.Errorf("%s: error %v, want it refused as read-only", m, err)
		}
	}
	if next.calls != 2 {
		t.Errorf("%d requests reached the server, want the 2 reads", next.calls)
	}
}

// simulate --from-file decides with the bounds of --nodes, groups without
// a node in the snapshot included; without --nodes it says in its answer
// what it assumed of the groups, and JSON stays data.
func TestSimulateSaysWhatItAssumed(t *testing.T) {
	out, err := run("simulate", "--from-file", fixture)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Assumed: no --nodes given") || !strings.Contains(out, "xlarge 0..11 (1 node(s))") {
		t.Fatalf("simulate without --nodes does not say what it assumed:\n%s", out)
	}
	out, err = run("simulate", "--from-file", fixture, "--nodes=0:4:small", "--nodes=0:3:gpu", "--nodes=0:1:xlarge",
		"--node-group-label=eks.amazonaws.com/nodegroup")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"xlarge: max node group size reached", "Node group gpu: min 0, max 3, target 0", "Node group xlarge: min 0, max 1, target 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("simulate with --nodes: no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "Assumed") || strings.Contains(out, "Grow xlarge") {
		t.Errorf("simulate with --nodes assumed bounds or grew past xlarge's maximum 1:\n%s", out)
	}
	out, err = run("simulate", "--from-file", fixture, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out), &core.Decisions{}); err != nil {
		t.Fatalf("simulate -o json is no JSON with the assumption said beside it: %v\n%s", err, out)
	}
}
