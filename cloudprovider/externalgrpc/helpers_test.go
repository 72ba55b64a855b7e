package externalgrpc_test

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"path"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/externalgrpc"
	"github.com/tidal-autoscaler/tidal/cloudprovider/externalgrpc/server"
)

// serve starts a server of cloud on addr ("127.0.0.1:0" for any port) and
// returns its address and a function that stops it.
func serve(t *testing.T, cloud cloudprovider.CloudProvider, tlsCfg *tls.Config, addr string) (string, func()) {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	s := server.NewGRPCServer(cloud, tlsCfg, grpc.UnaryInterceptor(countCalls(cloud)))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(lis)
	}()
	stop := func() {
		s.Stop()
		<-done
	}
	t.Cleanup(stop)
	return lis.Addr().String(), stop
}

// countCalls counts a fakeCloud's calls by RPC name.
func countCalls(cloud cloudprovider.CloudProvider) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if f, ok := cloud.(*fakeCloud); ok {
			f.mu.Lock()
			f.calls[path.Base(info.FullMethod)]++
			f.mu.Unlock()
		}
		return h(ctx, req)
	}
}

// client is a provider connected with the cloud config text.
func client(t *testing.T, config string) *externalgrpc.Provider {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cloud-config.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := externalgrpc.LoadConfig(path)
	if err != nil {
		t.Fatalf("load cloud config: %v", err)
	}
	p, err := externalgrpc.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("new provider: %v", err)
	}
	t.Cleanup(func() { _ = p.Cleanup() })
	return p
}

// group is the provider's group with id, after a Refresh.
func group(t *testing.T, p *externalgrpc.Provider, id string) cloudprovider.NodeGroup {
	t.Helper()
	if err := p.Refresh(context.Background()); err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	for _, g := range p.NodeGroups() {
		if g.Id() == id {
			return g
		}
	}
	t.Fatalf("no node group %q in %v", id, p.NodeGroups())
	return nil
}

// eventually polls cond every 50ms until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %v: %v", what, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
