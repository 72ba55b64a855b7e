package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/spf13/cobra"
	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/tidal-autoscaler/tidal/cloudprovider/snapshot"
	"github.com/tidal-autoscaler/tidal/cmd/tidal/app/nodeopts"
	"github.com/tidal-autoscaler/tidal/config"
	"github.com/tidal-autoscaler/tidal/explain"
)

// ExplainRequest is one `tidal explain` or `tidal simulate`: Kind is pod,
// node, nodegroup or "" (simulate, the whole plan).
type ExplainRequest struct {
	Kind, Name string
	// Output is text or json (the decisions as data).
	Output string
	// FromFile is a snapshot to decide on, "-" for Stdin; empty decides on
	// the live cluster of --kubeconfig, reading only.
	FromFile string
	// MaxBytes is the most of FromFile read (0: the default,
	// explain.DefaultMaxSnapshotBytes).
	MaxBytes int64
	Stdin    io.Reader
	// Notes receives what was skipped of the snapshot; nil is standard
	// error.
	Notes io.Writer
	// GroupLabels and Headroom set up the snapshot's node groups (see
	// snapshot.Config).
	GroupLabels []string
	Headroom    int
}

// explainTimeout bounds one explain: reading the cluster and deciding.
const explainTimeout = 5 * time.Minute

// Explain observes and decides once as the node loop does, acting on
// nothing, over the snapshot or the live cluster, and writes its answer to
// w. An answer (a pod not found, a node of no group) is no error; a bad
// request, an unreadable snapshot or a failed iteration are.
func Explain(ctx context.Context, opts *config.Options, req ExplainRequest, w io.Writer) error {
	if req.MaxBytes < 0 {
		return fmt.Errorf("--from-file-max-bytes=%d: must not be negative", req.MaxBytes)
	}
	if req.Output != "text" && req.Output != "json" {
		return fmt.Errorf("-o %q: want text or json", req.Output)
	}
	namespace, name, err := explainName(req)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, explainTimeout,
		fmt.Errorf("no answer within %v: is the API server of --kubeconfig reachable?", explainTimeout))
	defer cancel()
	src, note, err := explainSource(ctx, opts, req)
	if err != nil {
		return err
	}
	defer src.Cloud.Cleanup()
	if req.Notes == nil {
		req.Notes = os.Stderr
	}
	if note != "" {
		fmt.Fprintln(req.Notes, note)
	}
	d, err := explain.Decide(ctx, src, nodeopts.FromConfig(opts))
	if err != nil {
		return err
	}
	// What the snapshot's groups were assumed to be is said with the
	// answer; beside JSON, with the notes, so the JSON stays data.
	if a, ok := src.Cloud.(interface{ Assumed() string }); ok && a.Assumed() != "" {
		to := w
		if req.Output == "json" {
			to = req.Notes
		}
		fmt.Fprintln(to, a.Assumed())
	}
	if req.Output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	}
	switch req.Kind {
	case "pod":
		return explain.Pod(ctx, src.Client, d, namespace, name, w)
	case "node":
		return explain.Node(ctx, src.Client, d, req.Name, w)
	case "nodegroup":
		return explain.NodeGroup(d, req.Name, w)
	}
	return explain.Simulate(d, w)
}

// explainName splits a pod's NAMESPACE/NAME; a name without its
// namespace is refused before anything else is checked or read.
func explainName(req ExplainRequest) (namespace, name string, err error) {
	if req.Kind != "pod" {
		return "", req.Name, nil
	}
	namespace, name, ok := strings.Cut(req.Name, "/")
	if !ok || namespace == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("pod %q: want NAMESPACE/NAME, such as default/%s", req.Name, path.Base(req.Name))
	}
	return namespace, name, nil
}

// explainSource is the snapshot's source, or the live cluster's, read
// only; note says what of the snapshot was skipped.
func explainSource(ctx context.Context, opts *config.Options, req ExplainRequest) (explain.Source, string, error) {
	if req.FromFile == "" {
		src, err := liveSource(ctx, opts)
		return src, "", err
	}
	in := req.Stdin
	if req.FromFile != "-" {
		f, err := os.Open(req.FromFile)
		if err != nil {
			return explain.Source{}, "", fmt.Errorf("--from-file: %w", err)
		}
		defer f.Close()
		in = f
	}
	max := req.MaxBytes
	if max == 0 {
		max = explain.DefaultMaxSnapshotBytes
	}
	s, err := explain.LoadAtMost(in, max)
	if err != nil {
		return explain.Source{}, "", fmt.Errorf("--from-file=%s: %w", req.FromFile, err)
	}
	src, err := explain.FileSource(s, snapshot.Config{Groups: opts.NodeGroups, Labels: req.GroupLabels, Headroom: req.Headroom}, NewInformerFactory)
	if err != nil {
		return explain.Source{}, "", fmt.Errorf("--from-file=%s: %w", req.FromFile, err)
	}
	return src, s.SkippedNote(), nil
}

// newExplainCommands are `tidal explain pod|node|nodegroup` and `tidal
// simulate`; they take tidal's flags, as the loop they run does.
func newExplainCommands(opts *config.Options, logging *logsapi.LoggingConfiguration) []*cobra.Command {
	req := &ExplainRequest{}
	run := func(kind string) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			r := *req
			r.Kind, r.Stdin, r.Notes = kind, cmd.InOrStdin(), cmd.ErrOrStderr()
			if len(args) > 0 {
				r.Name = args[0]
			}
			if _, _, err := explainName(r); err != nil {
				return err
			}
			if err := validateExplain(opts, logging, req.FromFile != ""); err != nil {
				return err
			}
			ctx, stop := signalContext()
			defer stop()
			return Explain(ctx, opts, r, cmd.OutOrStdout())
		}
	}
	explainCmd := &cobra.Command{Use: "explain", Short: "Say why tidal would or would not scale for a pod, a node or a node group",
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("explain what? pod NAMESPACE/NAME, node NAME or nodegroup NAME")
			}
			return fmt.Errorf("explain %q: want pod NAMESPACE/NAME, node NAME or nodegroup NAME", args[0])
		}}
	for _, sub := range []struct{ use, short, kind string }{
		{"pod NAMESPACE/NAME", "Why a pod waits: the node group tidal grows for it, or why none can host it", "pod"},
		{"node NAME", "Whether tidal can remove a node, and what keeps it", "node"},
		{"nodegroup NAME", "A node group's sizes, health, scale-up and nodes", "nodegroup"},
	} {
		explainCmd.AddCommand(&cobra.Command{Use: sub.use, Short: sub.short, Args: cobra.ExactArgs(1), RunE: run(sub.kind)})
	}
	simulate := &cobra.Command{Use: "simulate", Short: "Run one scale-up and scale-down decision on a snapshot and print the plan",
		Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, args []string) error {
			if req.FromFile == "" {
				return fmt.Errorf("simulate needs --from-file (a snapshot, or - for standard input)")
			}
			return run("")(cmd, args)
		}}
	for _, c := range []*cobra.Command{explainCmd, simulate} {
		fs := c.PersistentFlags()
		fs.StringVar(&req.FromFile, "from-file", "", "Decide on a snapshot: the output of `kubectl get nodes,pods,pdb,replicasets,statefulsets,daemonsets,deployments,jobs,configmaps -A -o yaml` (- reads standard input). Without it, decide on the cluster of --kubeconfig, reading only.")
		fs.Int64Var(&req.MaxBytes, "from-file-max-bytes", explain.DefaultMaxSnapshotBytes, "With --from-file: the most bytes of the snapshot read; a larger one is refused.")
		fs.StringVarP(&req.Output, "output", "o", "text", "Output: text, or json (the decisions as data).")
		fs.StringSliceVar(&req.GroupLabels, "node-group-label", nil, "With --from-file: node labels that name a node's group, the first present wins (default "+strings.Join(snapshot.DefaultGroupLabels, ",")+").")
		fs.IntVar(&req.Headroom, "node-group-headroom", snapshot.DefaultDiscoveredHeadroom, "With --from-file and no --nodes: how many nodes a group found from the labels may grow by.")
	}
	return []*cobra.Command{explainCmd, simulate}
}

// validateExplain checks the flags. A snapshot needs no --cloud-provider:
// its nodes are the cloud.
func validateExplain(opts *config.Options, logging *logsapi.LoggingConfiguration, fromFile bool) error {
	if fromFile && opts.CloudProvider == "" {
		opts.CloudProvider = config.CloudProviderLocal
		defer func() { opts.CloudProvider = "" }()
	}
	if err := opts.Validate(); err != nil {
		return err
	}
	if err := validateLogging(logging); err != nil {
		return err
	}
	return applyLogging(logging)
}
