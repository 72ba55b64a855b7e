package localcluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

// apiServer is a running kube-apiserver.
type apiServer struct {
	config *rest.Config
	done   chan error
	cancel context.CancelFunc
}

// apiServerFlags are the kube-apiserver flags of opts. Unless
// opts.ServiceAccounts, the ServiceAccount admission plugin is disabled: no
// controller would create the ServiceAccounts it looks up, and it would
// reject every pod.
func apiServerFlags(opts Options) []string {
	var flags []string
	if !opts.ServiceAccounts {
		flags = append(flags, "--disable-admission-plugins=ServiceAccount")
	}
	return append(flags, opts.APIServerFlags...)
}

// startAPIServer runs a real kube-apiserver, in this process, on a free
// loopback port, backed by the etcd at etcdURL.
func startAPIServer(ctx context.Context, dir, etcdURL string, port int, flags []string) (*apiServer, error) {
	s := options.NewServerRunOptions()
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, f := range s.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
	listener, boundPort, err := listenLoopback(port)
	if err != nil {
		return nil, err
	}
	s.SecureServing.Listener = listener
	s.SecureServing.BindPort = boundPort
	s.SecureServing.ExternalAddress = net.ParseIP("127.0.0.1")
	s.SecureServing.ServerCert.CertDirectory = filepath.Join(dir, "certs")
	s.ServiceClusterIPRanges = "10.0.0.0/16"
	s.Etcd.StorageConfig.Transport.ServerList = []string{etcdURL}

	keyFile, err := writeServiceAccountKey(dir)
	if err != nil {
		listener.Close()
		return nil, err
	}
	s.ServiceAccountSigningKeyFile = keyFile
	s.Authentication.ServiceAccounts.KeyFiles = []string{keyFile}
	s.Authentication.ServiceAccounts.Issuers = []string{"https://localcluster.tidal.invalid"}

	if err := fs.Parse(flags); err != nil {
		listener.Close()
		return nil, fmt.Errorf("kube-apiserver flags: %w", err)
	}
	if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		listener.Close()
		return nil, fmt.Errorf("kube-apiserver feature gates: %w", err)
	}

	runCtx, cancel := context.WithCancel(ctx)
	server, err := buildAPIServer(runCtx, s)
	if err != nil {
		cancel()
		listener.Close()
		return nil, err
	}
	as := &apiServer{config: rest.CopyConfig(server.loopback), done: make(chan error, 1), cancel: cancel}
	go func() {
		as.done <- server.run(runCtx)
		close(as.done)
	}()
	if err := as.waitReady(ctx); err != nil {
		as.stop()
		return nil, err
	}
	return as, nil
}

type builtAPIServer struct {
	loopback *rest.Config
	run      func(context.Context) error
}

func buildAPIServer(ctx context.Context, s *options.ServerRunOptions) (*builtAPIServer, error) {
	completed, err := s.Complete(ctx)
	if err != nil {
		return nil, fmt.Errorf("complete kube-apiserver options: %w", err)
	}
	if errs := completed.Validate(); len(errs) != 0 {
		return nil, fmt.Errorf("validate kube-apiserver options: %w", errors.Join(errs...))
	}
	cfg, err := app.NewConfig(completed)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver config: %w", err)
	}
	cc, err := cfg.Complete()
	if err != nil {
		return nil, fmt.Errorf("complete kube-apiserver config: %w", err)
	}
	chain, err := app.CreateServerChain(cc)
	if err != nil {
		return nil, fmt.Errorf("create kube-apiserver server chain: %w", err)
	}
	return &builtAPIServer{
		loopback: chain.GenericAPIServer.LoopbackClientConfig,
		run: func(ctx context.Context) error {
			prepared, err := chain.PrepareRun()
			if err != nil {
				return err
			}
			return prepared.Run(ctx)
		},
	}, nil
}

// readyTimeout bounds the wait for a starting kube-apiserver's readiness.
// It is the kube-apiserver's own bound on its slowest post-start hook (the
// priority-and-fairness bootstrap waits up to 5 minutes): a server stopped
// while a post-start hook still runs exits the whole process
// (klog.Fatalf), so giving up earlier on a busy machine ends every test of
// the process, not only the start.
const readyTimeout = 5 * time.Minute

// waitReady polls /readyz and the default namespace, failing early if the
// server stops.
func (a *apiServer) waitReady(ctx context.Context) error {
	client, err := kubernetes.NewForConfig(a.config)
	if err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, readyTimeout, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-a.done:
			return false, fmt.Errorf("kube-apiserver stopped while starting: %v", err)
		default:
		}
		status := 0
		client.CoreV1().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&status)
		if status != 200 {
			return false, nil
		}
		_, err := client.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, nil
	})
}

// stop cancels the server and waits for it to finish, so that etcd can be
// stopped after it.
func (a *apiServer) stop() {
	a.cancel()
	select {
	case <-a.done:
	case <-time.After(30 * time.Second):
	}
}

func listenLoopback(port int) (net.Listener, int, error) {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return nil, 0, fmt.Errorf("listen for kube-apiserver on 127.0.0.1:%d: %w", port, err)
	}
	return l, l.Addr().(*net.TCPAddr).Port, nil
}

func writeServiceAccountKey(dir string) (string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", fmt.Errorf("generate service account key: %w", err)
	}
	pem, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return "", fmt.Errorf("encode service account key: %w", err)
	}
	path := filepath.Join(dir, "sa.key")
	if err := os.WriteFile(path, pem, 0o600); err != nil {
		return "", fmt.Errorf("write service account key: %w", err)
	}
	return path, nil
}
