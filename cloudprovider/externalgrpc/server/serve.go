package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tidal-autoscaler/tidal/cloudprovider"
	"github.com/tidal-autoscaler/tidal/cloudprovider/externalgrpc/protos"
)

// TLSConfig is the server side of mutual TLS: its certificate and key, and
// the CA whose certificates clients must present.
func TLSConfig(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("externalgrpc server: cert %s / key %s: %w", certFile, keyFile, err)
	}
	pem, err := os.ReadFile(clientCAFile)
	if err != nil {
		return nil, fmt.Errorf("externalgrpc server: client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("externalgrpc server: client CA %s: no PEM certificate in it", clientCAFile)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{pair}, ClientCAs: pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
	}, nil
}

// NewGRPCServer is a gRPC server of the protocol answering with cloud;
// plaintext when tlsCfg is nil. opts are added to the server's.
func NewGRPCServer(cloud cloudprovider.CloudProvider, tlsCfg *tls.Config, opts ...grpc.ServerOption) *grpc.Server {
	return newGRPCServer(New(cloud), tlsCfg, opts...)
}

func newGRPCServer(srv *Server, tlsCfg *tls.Config, opts ...grpc.ServerOption) *grpc.Server {
	creds := insecure.NewCredentials()
	if tlsCfg != nil {
		creds = credentials.NewTLS(tlsCfg)
	}
	s := grpc.NewServer(append([]grpc.ServerOption{grpc.Creds(creds)}, opts...)...)
	protos.RegisterCloudProviderServer(s, srv)
	return s
}

// Serve answers on lis until ctx ends, then stops. opts are added to the
// server's.
func Serve(ctx context.Context, lis net.Listener, cloud cloudprovider.CloudProvider, tlsCfg *tls.Config, opts ...grpc.ServerOption) error {
	return serve(ctx, lis, New(cloud), tlsCfg, opts...)
}

func serve(ctx context.Context, lis net.Listener, srv *Server, tlsCfg *tls.Config, opts ...grpc.ServerOption) error {
	s := newGRPCServer(srv, tlsCfg, opts...)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		s.Stop()
	}()
	err := s.Serve(lis)
	<-stopped
	if err != nil {
		return fmt.Errorf("externalgrpc server on %s: %w", lis.Addr(), err)
	}
	return nil
}
