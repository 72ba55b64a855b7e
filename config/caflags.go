package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// CAFlagStatus is what tidal does with one of Cluster Autoscaler's flags.
type CAFlagStatus string

const (
	// CAFlagImplemented: tidal has the flag with CA's meaning (the note
	// says where its default differs, and why).
	CAFlagImplemented CAFlagStatus = "implemented"
	// CAFlagAccepted: tidal parses the flag (CA's type and default) and
	// logs once at start that it has no effect, and why.
	CAFlagAccepted CAFlagStatus = "accepted"
)

// Kinds of value of an accepted flag, so that it parses as CA's does.
const (
	kindBool     = "bool"
	kindString   = "string"
	kindStrings  = "strings"
	kindInt      = "int"
	kindFloat    = "float"
	kindDuration = "duration"
)

// CAFlag is one flag of Cluster Autoscaler and what tidal makes of it.
type CAFlag struct {
	Name   string
	Status CAFlagStatus
	// Note: for an implemented flag, where tidal's default or meaning
	// differs; for an accepted one, why it has no effect.
	Note string
	// Kind and Default of an accepted flag (CA's).
	Kind    string
	Default string
}

func implemented(name, note string) CAFlag {
	return CAFlag{Name: name, Status: CAFlagImplemented, Note: note}
}

func accepted(name, kind, def, why string) CAFlag {
	return CAFlag{Name: name, Status: CAFlagAccepted, Kind: kind, Default: def, Note: why}
}

// CAFlags lists every flag of Cluster Autoscaler's FAQ ("What are the
// parameters to CA?"), sorted by name.
func CAFlags() []CAFlag {
	all := slices.Concat(caLoggingFlags(), caImplementedFlags(), caAcceptedFlags())
	slices.SortFunc(all, func(a, b CAFlag) int { return strings.Compare(a.Name, b.Name) })
	return all
}

// caLoggingFlags are klog's and Kubernetes' logging flags
// (k8s.io/component-base/logs), registered by the command.
func caLoggingFlags() []CAFlag {
	var out []CAFlag
	for _, name := range []string{"add-dir-header", "alsologtostderr", "log-backtrace-at", "log-dir", "log-file",
		"log-file-max-size", "logtostderr", "one-output", "skip-headers", "skip-log-headers", "stderrthreshold"} {
		out = append(out, implemented(name, "klog's flag"))
	}
	for _, name := range []string{"log-flush-frequency", "log-json-info-buffer-size", "log-json-split-stream",
		"log-text-info-buffer-size", "log-text-split-stream", "logging-format", "v", "vmodule"} {
		out = append(out, implemented(name, "Kubernetes' logging flag (k8s.io/component-base/logs)"))
	}
	return append(out, implemented("feature-gates", "Kubernetes' feature gates (the scheduler's, used in simulation) and the logging gates"))
}

// caImplementedFlags are the CA flags tidal registers itself in AddFlags.
func caImplementedFlags() []CAFlag {
	out := []CAFlag{
		implemented("cloud-provider", "required: aws, externalgrpc, or local (a simulated cloud, only for clusters it created); CA defaults to gce"),
		implemented("cloud-config", "used by --cloud-provider=externalgrpc (CA's format, docs/externalgrpc.md); the other providers take theirs from flags and the cloud SDK"),
		implemented("max-drain-parallelism", "default 5, CA 1: see docs/scaledown.md; logged at start when not set"),
		implemented("status-config-map-name", "default tidal-status"),
		implemented("leader-elect-resource-name", "default tidal"),
		implemented("emit-per-nodegroup-metrics", "CA's per node group gauges; see docs/metrics.md"),
		implemented("node-info-cache-expire-time", "how long a template made from a live node serves once the group has none"),
		implemented("max-binpacking-time", "default 10s: the whole decision's budget, the rest is decided in the next iteration"),
		implemented("expander", "also tidal's topology-balance, priority-ratio and price; grpc is not offered"),
		implemented("node-group-auto-discovery", "asg:tag=... (--cloud-provider=aws)"),
		implemented("user-agent", "default tidal"),
		implemented("scale-down-non-empty-candidates-count", "default 0 (no limit), CA 30: see docs/scaledown.md; logged at start when not set"),
		implemented("scale-down-gpu-utilization-threshold", "GPUs are the nvidia.com/gpu resource"),
	}
	for _, name := range []string{
		"address", "balance-similar-node-groups", "balancing-ignore-label", "balancing-label",
		"cordon-node-before-terminating", "cores-total", "daemonset-eviction-for-empty-nodes",
		"daemonset-eviction-for-occupied-nodes", "enforce-node-group-min-size", "expendable-pods-priority-cutoff", "ignore-daemonsets-utilization",
		"ignore-mirror-pods-utilization", "ignore-taint", "initial-node-group-backoff-duration", "kube-client-burst",
		"kube-client-qps", "kubeconfig", "kubernetes", "leader-elect", "leader-elect-lease-duration",
		"leader-elect-renew-deadline", "leader-elect-retry-period", "max-bulk-soft-taint-count",
		"max-bulk-soft-taint-time", "max-failing-time", "max-graceful-termination-sec", "max-inactivity",
		"max-node-group-backoff-duration", "max-node-provision-time", "max-node-startup-time",
		"max-nodegroup-binpacking-duration", "max-nodes-per-scaleup", "max-nodes-total", "max-pod-eviction-time",
		"max-scale-down-parallelism", "max-total-unready-percentage", "memory-total", "namespace",
		"new-pod-scale-up-delay", "node-delete-delay-after-taint", "node-group-backoff-reset-timeout", "nodes",
		"ok-total-unready-count", "record-duplicated-events", "scale-down-delay-after-add",
		"scale-down-delay-after-delete", "scale-down-delay-after-failure", "scale-down-enabled",
		"scale-down-unneeded-time", "scale-down-unready-enabled", "scale-down-unready-time",
		"scale-down-utilization-threshold", "scan-interval", "skip-nodes-with-custom-controller-pods",
		"skip-nodes-with-local-storage", "skip-nodes-with-system-pods", "startup-taint", "status-taint",
		"write-status-configmap"} {
		out = append(out, implemented(name, ""))
	}
	return out
}

// Reasons shared by several accepted flags.
const (
	notGCE        = "GCE only"
	notClusterAPI = "Cluster API only"
	noProvReq     = "tidal does not handle ProvisioningRequests"
	noBuffers     = "tidal has no CapacityBuffers; spare capacity comes from the autoscaling.tidal.dev/headroom-replicas annotation"
	ownDeletion   = "tidal's removals are taint, drain, delete per node (docs/scaledown.md); no batching"
	ownSimulate   = "tidal's simulation has its own bounds and caches"
)

// caAcceptedFlags are the CA flags tidal parses but does not act on. To
// implement one, register it where its options live (AddFlags) and move its
// name from here to caImplementedFlags; the tests check that every CA flag
// is in exactly one list and registered, and regenerate docs/ca-flags.md
// (go test ./config -run TestCAFlagsDoc -update).
func caAcceptedFlags() []CAFlag {
	return []CAFlag{
		accepted("allowed-scheduler-names", kindStrings, "", "tidal has no such option"),
		accepted("async-node-groups", kindBool, "false", "tidal creates no node groups"),
		accepted("aws-use-static-instance-list", kindBool, "false", "tidal's AWS provider reads instance types from the EC2 API (DescribeInstanceTypes)"),
		accepted("blocking-system-pod-distruption-timeout", kindDuration, "1h0m0s", "tidal never drains kube-system pods without a PodDisruptionBudget (--skip-nodes-with-system-pods)"),
		accepted("bulk-mig-instances-listing-enabled", kindBool, "false", notGCE),
		accepted("bypassed-scheduler-names", kindStrings, "", "tidal has no such option"),
		accepted("capacity-buffer-controller-enabled", kindBool, "false", noBuffers),
		accepted("capacity-buffer-pod-dry-run-enabled", kindBool, "true", noBuffers),
		accepted("capacity-buffer-pod-injection-enabled", kindBool, "false", noBuffers),
		accepted("capacity-quotas-enabled", kindBool, "false", "tidal's limits are --cores-total, --memory-total and --max-nodes-total"),
		accepted("check-capacity-batch-processing", kindBool, "false", noProvReq),
		accepted("check-capacity-processor-instance", kindString, "", noProvReq),
		accepted("check-capacity-provisioning-request-batch-timebox", kindDuration, "10s", noProvReq),
		accepted("check-capacity-provisioning-request-max-batch-size", kindInt, "10", noProvReq),
		accepted("cloud-provider-gce-l7lb-src-cidrs", kindString, "130.211.0.0/22,35.191.0.0/16", notGCE),
		accepted("cloud-provider-gce-lb-src-cidrs", kindString, "130.211.0.0/22,209.85.152.0/22,209.85.204.0/22,35.191.0.0/16", notGCE),
		accepted("cluster-name", kindString, "", "used by other providers; on AWS the cluster is named in the discovery tags"),
		accepted("cluster-snapshot-parallelism", kindInt, "16", ownSimulate),
		accepted("clusterapi-cloud-config-authoritative", kindBool, "false", notClusterAPI),
		accepted("debugging-snapshot-enabled", kindBool, "false", "tidal has no /snapshotz; its decisions are in events, logs and the status ConfigMap"),
		accepted("drain-priority-config", kindString, "", "tidal has no drain priorities"),
		accepted("dynamic-node-delete-delay-after-taint-enabled", kindBool, "false", "tidal waits --node-delete-delay-after-taint"),
		accepted("enable-csi-node-aware-scheduling", kindBool, "false", "tidal always simulates with CSINode objects (the scheduler's volume plugins)"),
		accepted("enable-dynamic-resource-allocation", kindBool, "true", "tidal does not simulate dynamic resource allocation"),
		accepted("enable-proactive-scaleup", kindBool, "false", "tidal's --provision-ahead plans nodes for pods the pod loop is about to create"),
		accepted("enable-provisioning-requests", kindBool, "false", noProvReq),
		accepted("estimator", kindString, "binpacking", "tidal always bin-packs"),
		accepted("fastpath-binpacking-enabled", kindBool, "false", ownSimulate),
		accepted("force-delete-failed-nodes", kindBool, "false", "tidal gives back failed instances through the cloud provider"),
		accepted("force-delete-unregistered-nodes", kindBool, "false", "tidal gives back instances not registered within --max-node-provision-time through the cloud provider"),
		accepted("force-ds", kindBool, "false", "templates get a pod of each DaemonSet in the cluster"),
		accepted("frequent-loops-enabled", kindBool, "true", "tidal's node loop always runs early when pods become unschedulable"),
		accepted("gce-concurrent-refreshes", kindInt, "1", notGCE),
		accepted("gce-mig-instances-min-refresh-wait-time", kindDuration, "5s", notGCE),
		accepted("gpu-total", kindStrings, "", "tidal limits cores, memory and nodes only"),
		accepted("grpc-expander-cert", kindString, "", "tidal has no grpc expander"),
		accepted("grpc-expander-url", kindString, "", "tidal has no grpc expander"),
		accepted("kube-api-content-type", kindString, "application/vnd.kubernetes.protobuf", "tidal's clients keep their own content type"),
		accepted("leader-elect-resource-lock", kindString, "leases", "tidal always uses a Lease"),
		accepted("leader-elect-resource-namespace", kindString, "", "the Lease lives in --namespace"),
		accepted("max-allocatable-difference-ratio", kindFloat, "0.05", "tidal's similarity test for --balance-similar-node-groups has fixed tolerances"),
		accepted("max-free-difference-ratio", kindFloat, "0.05", "tidal's similarity test for --balance-similar-node-groups has fixed tolerances"),
		accepted("max-node-skip-eval-time-tracker-enabled", kindBool, "false", "tidal has no such metric"),
		accepted("memory-difference-ratio", kindFloat, "0.015", "tidal's similarity test for --balance-similar-node-groups has fixed tolerances"),
		accepted("min-replica-count", kindInt, "0", "tidal leaves that to PodDisruptionBudgets"),
		accepted("node-deletion-batcher-interval", kindDuration, "0s", ownDeletion),
		accepted("node-deletion-candidate-ttl", kindDuration, "0s", "tidal has no such option"),
		accepted("node-deletion-delay-timeout", kindDuration, "2m0s", "tidal has no deletion-delay annotations"),
		accepted("node-removal-latency-tracking-enabled", kindBool, "false", "tidal has no such metric"),
		accepted("parallel-scale-up", kindBool, "false", "tidal has no such option"),
		accepted("pod-injection-limit", kindInt, "5000", noProvReq),
		accepted("predicate-parallelism", kindInt, "4", ownSimulate),
		accepted("profiling", kindBool, "false", "tidal serves no pprof endpoints"),
		accepted("provisioning-request-initial-backoff-time", kindDuration, "1m0s", noProvReq),
		accepted("provisioning-request-max-backoff-cache-size", kindInt, "1000", noProvReq),
		accepted("provisioning-request-max-backoff-time", kindDuration, "10m0s", noProvReq),
		accepted("regional", kindBool, "false", notGCE),
		accepted("scale-down-candidates-pool-min-count", kindInt, "50", ownSimulate),
		accepted("scale-down-candidates-pool-ratio", kindFloat, "0.1", ownSimulate),
		accepted("scale-down-delay-type-local", kindBool, "false", "tidal's scale-down delays are cluster-wide"),
		accepted("scale-down-simulation-timeout", kindDuration, "30s", ownSimulate),
		accepted("scale-from-unschedulable", kindBool, "false", "tidal acts on unschedulable pods only"),
		accepted("scale-up-from-zero", kindBool, "true", "tidal always scales node groups up from zero"),
		accepted("scheduler-config-file", kindString, "", "tidal simulates with the default scheduler profile"),
		accepted("startup-taint-prefix", kindStrings, "", "tidal takes exact keys in --startup-taint"),
		accepted("unremovable-node-recheck-timeout", kindDuration, "5m0s", "tidal has no such option"),
	}
}

// addAcceptedCAFlags registers the accepted CA flags, hidden from --help
// (docs/ca-flags.md lists them), with CA's types and defaults.
func addAcceptedCAFlags(fs *pflag.FlagSet) {
	for _, f := range caAcceptedFlags() {
		if fs.Lookup(f.Name) != nil {
			continue
		}
		usage := "Cluster Autoscaler's flag, no effect in tidal: " + f.Note + "."
		switch f.Kind {
		case kindBool:
			fs.Bool(f.Name, f.Default == "true", usage)
		case kindString:
			fs.String(f.Name, f.Default, usage)
		case kindStrings:
			fs.StringArray(f.Name, nil, usage)
		case kindInt:
			n, _ := strconv.Atoi(f.Default)
			fs.Int(f.Name, n, usage)
		case kindFloat:
			x, _ := strconv.ParseFloat(f.Default, 64)
			fs.Float64(f.Name, x, usage)
		case kindDuration:
			d, _ := time.ParseDuration(f.Default)
			fs.Duration(f.Name, d, usage)
		default:
			panic(fmt.Sprintf("flag %s: unknown kind %q", f.Name, f.Kind))
		}
		_ = fs.MarkHidden(f.Name)
	}
}

// AcceptedCAFlagsSet lists, as name=value, the accepted CA flags given on
// fs's command line, for the one log line at start.
func AcceptedCAFlagsSet(fs *pflag.FlagSet) []string {
	var out []string
	for _, f := range caAcceptedFlags() {
		if pf := fs.Lookup(f.Name); pf != nil && pf.Changed {
			out = append(out, f.Name+"="+pf.Value.String())
		}
	}
	return out
}

// OwnDefault is a flag whose default tidal keeps apart from Cluster
// Autoscaler's on purpose.
type OwnDefault struct {
	Name, CADefault, Why string
}

// OwnDefaults are logged at start when not set.
func OwnDefaults() []OwnDefault {
	return []OwnDefault{
		{Name: "max-drain-parallelism", CADefault: "1", Why: "drains of different nodes are independent; see docs/scaledown.md"},
		{Name: "scale-down-non-empty-candidates-count", CADefault: "30", Why: "tidal's plan considers every candidate in well under a second; see docs/scaledown.md"},
		{Name: "max-binpacking-time", CADefault: "5m0s", Why: "one decision never stalls the loop; what is left is decided in the next iteration"},
	}
}
