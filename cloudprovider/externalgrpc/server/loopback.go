package server

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"k8s.io/klog/v2"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/externalgrpc/selfsigned"
)

// Loopback is a server of a provider on a loopback port, with mutual TLS
// of a throw-away CA, and the cloud config file of a client of it.
type Loopback struct {
	// Address is the server's host:port.
	Address string
	// CloudConfig is the path of the client's --cloud-config file.
	CloudConfig string
	// Files are the certificates and keys, in dir.
	Files selfsigned.Files

	done chan error
}

// LoopbackConfig is how StartLoopbackWith serves.
type LoopbackConfig struct {
	// Port is the loopback port to listen on; 0 picks a free one.
	Port int
	// Server are options of the protocol's server (WithNodeLookup).
	Server []Option
	// GRPC are added to the gRPC server's options.
	GRPC []grpc.ServerOption
}

// StartLoopback serves cloud on 127.0.0.1 until ctx ends. It writes the
// certificates and cloud-config.yaml (with the given call timeout) into
// dir. Wait returns once the server has stopped. opts are added to the
// server's.
func StartLoopback(ctx context.Context, cloud cloudprovider.CloudProvider, dir string, timeout time.Duration, opts ...grpc.ServerOption) (*Loopback, error) {
	return StartLoopbackWith(ctx, cloud, dir, timeout, LoopbackConfig{GRPC: opts})
}

// StartLoopbackWith is StartLoopback on cfg's port with cfg's options.
func StartLoopbackWith(ctx context.Context, cloud cloudprovider.CloudProvider, dir string, timeout time.Duration, cfg LoopbackConfig) (*Loopback, error) {
	files, err := selfsigned.Write(dir)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := TLSConfig(files.ServerCert, files.ServerKey, files.CACert)
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Port)))
	if err != nil {
		return nil, fmt.Errorf("externalgrpc server: listen: %w", err)
	}
	lb := &Loopback{Address: lis.Addr().String(), Files: files, CloudConfig: filepath.Join(dir, "cloud-config.yaml"), done: make(chan error, 1)}
	if err := os.WriteFile(lb.CloudConfig, []byte(files.CloudConfig(lb.Address, timeout)), 0o600); err != nil {
		_ = lis.Close()
		return nil, fmt.Errorf("externalgrpc server: write cloud config: %w", err)
	}
	go func() { lb.done <- serve(ctx, lis, New(cloud, cfg.Server...), tlsCfg, cfg.GRPC...) }()
	klog.FromContext(ctx).Info("Serving the cloud provider over externalgrpc", "address", lb.Address, "cloudConfig", lb.CloudConfig)
	return lb, nil
}

// Wait waits for the server to stop (its context ended) and returns why it
// stopped early, if it did.
func (lb *Loopback) Wait() error { return <-lb.done }
