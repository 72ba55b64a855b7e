// Package localcluster runs a real Kubernetes control plane inside the
// calling process: embedded etcd, kube-apiserver, kube-scheduler, the
// workload, disruption, node lifecycle and garbage-collection controllers,
// and kwok as the kubelet of every Node. It serves tidal's tests and
// `tidal-local`.
//
// Nodes are not created here: whoever plays the cloud (cloudprovider/local)
// creates Node objects with capacity and allocatable set, and the simulated
// kubelet makes them Ready and runs the pods bound to them.
package localcluster

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// Options configure a local cluster. The zero value is a quiet cluster in a
// fresh temporary directory.
type Options struct {
	// Dir holds etcd's data, certificates and the kubeconfig. Empty means a
	// new temporary directory, removed by Stop.
	Dir string
	// APIServerPort is the loopback port of the API server; 0 picks a free one.
	APIServerPort int
	// EtcdPort and EtcdPeerPort are etcd's loopback client and peer ports;
	// 0 picks a free one.
	EtcdPort, EtcdPeerPort int
	// APIServerFlags are extra kube-apiserver flags, such as
	// --authorization-mode=RBAC.
	APIServerFlags []string
	// LogOutput receives the control plane's logs. Nil discards them.
	// klog is process-wide: setting this redirects every klog user in the
	// process that logs through the global klog functions.
	LogOutput io.Writer
	// NodeMonitorGracePeriod is how long a node may miss heartbeats before
	// the node lifecycle controller marks it NotReady. Zero means 50s.
	NodeMonitorGracePeriod time.Duration
	// ServiceAccounts turns on the ServiceAccount admission plugin and runs
	// the controller that gives every namespace its "default"
	// ServiceAccount, so that pods are stored as in a real cluster: with
	// serviceAccountName and the projected kube-api-access-<random> token
	// volume mounted in every container. Off, the plugin is disabled and
	// pods carry neither. A pod created in a namespace before its default
	// ServiceAccount exists is refused, as in a real cluster.
	ServiceAccounts bool
	// DisabledControllers are controllers not to run, by
	// kube-controller-manager's names (as its --controllers=-name):
	// deployment, replicaset, statefulset, daemonset, disruption,
	// nodelifecycle, podgc, namespace, garbagecollector, serviceaccount.
	// A load generator that creates a ReplicaSet's pods itself disables
	// replicaset, which would otherwise create them too.
	DisabledControllers []string
}

// Cluster is a running local cluster.
type Cluster struct {
	// Config is an admin (system:masters) client configuration.
	Config *rest.Config
	// Client is a clientset built from Config.
	Client kubernetes.Interface
	// KubeconfigPath is a kubeconfig file for kubectl.
	KubeconfigPath string
	// Dir is the cluster's working directory.
	Dir string

	cancel    context.CancelFunc
	apiserver *apiServer
	stopEtcd  func()
	removeDir bool
	stopOnce  sync.Once
}

// Start brings up the control plane and returns once the API server is ready
// and every component runs. The cluster lives until Stop or until ctx ends;
// call Stop in either case to release etcd and the directory.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if _, err := disabledControllers(opts.DisabledControllers); err != nil {
		return nil, err
	}
	quietKlog(opts.LogOutput)
	c := &Cluster{Dir: opts.Dir}
	if c.Dir == "" {
		dir, err := os.MkdirTemp("", "tidal-localcluster-")
		if err != nil {
			return nil, fmt.Errorf("create cluster directory: %w", err)
		}
		c.Dir, c.removeDir = dir, true
	} else if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("create cluster directory: %w", err)
	}
	// Components log through the context's logger too; keep them quiet.
	runCtx, cancel := context.WithCancel(klog.NewContext(context.WithoutCancel(ctx), logr.Discard()))
	c.cancel = cancel
	go func() {
		select {
		case <-ctx.Done():
			cancel()
		case <-runCtx.Done():
		}
	}()
	if err := c.start(runCtx, opts); err != nil {
		// Whatever started (etcd, the API server) stops, and a directory
		// Start made goes; the caller gets the error, not a half cluster.
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context, opts Options) error {
	etcdURL, stopEtcd, err := startEtcd(ctx, c.Dir, opts.EtcdPort, opts.EtcdPeerPort)
	if err != nil {
		return err
	}
	c.stopEtcd = stopEtcd
	if c.apiserver, err = startAPIServer(ctx, c.Dir, etcdURL, opts.APIServerPort, apiServerFlags(opts)); err != nil {
		return err
	}
	c.Config = rest.CopyConfig(c.apiserver.config)
	c.Config.QPS, c.Config.Burst = 1000, 2000
	if c.Client, err = kubernetes.NewForConfig(c.Config); err != nil {
		return fmt.Errorf("cluster client: %w", err)
	}
	c.KubeconfigPath = filepath.Join(c.Dir, "kubeconfig")
	if err := WriteKubeconfig(c.Config, c.KubeconfigPath); err != nil {
		return err
	}
	if err := startScheduler(ctx, c.Config); err != nil {
		return err
	}
	grace := opts.NodeMonitorGracePeriod
	if grace == 0 {
		grace = 50 * time.Second
	}
	if err := startControllers(ctx, c.Config, controllerTimings{
		nodeMonitorPeriod: time.Second, nodeStartupGracePeriod: time.Minute, nodeMonitorGracePeriod: grace,
	}, opts.ServiceAccounts, opts.DisabledControllers); err != nil {
		return err
	}
	logOut := opts.LogOutput
	if logOut == nil {
		logOut = io.Discard
	}
	return startKubelets(ctx, c.KubeconfigPath, logOut)
}

// Stop shuts the cluster down: components and API server first, then etcd,
// then the directory if Start created it. It is safe to call more than once.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		if c.cancel != nil {
			c.cancel()
		}
		if c.apiserver != nil {
			c.apiserver.stop()
		}
		if c.stopEtcd != nil {
			c.stopEtcd()
		}
		if c.removeDir {
			os.RemoveAll(c.Dir)
		}
	})
}

// quietKlog sends klog's global output to w (nil: nowhere), errors included.
func quietKlog(w io.Writer) {
	if w == nil {
		w = io.Discard
	}
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(w)
}
