package externalgrpc_test

import (
	"context"
	"testing"
	"time"

	"github.com/tidal-autoscaler/tidal/cloudprovider/externalgrpc/selfsigned"
	"github.com/tidal-autoscaler/tidal/cloudprovider/externalgrpc/server"
)

func TestMutualTLS(t *testing.T) {
	files, err := selfsigned.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := server.TLSConfig(files.ServerCert, files.ServerKey, files.CACert)
	if err != nil {
		t.Fatal(err)
	}
	addr, _ := serve(t, newFakeCloud(), tlsCfg, "127.0.0.1:0")
	if err := client(t, files.CloudConfig(addr, 5*time.Second)).Refresh(context.Background()); err != nil {
		t.Fatalf("Refresh over TLS with the CA's client certificate: %v", err)
	}

	other, err := selfsigned.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	foreign := other
	foreign.CACert = files.CACert // trusts the server, but its own certificate is another CA's
	if err := client(t, foreign.CloudConfig(addr, 5*time.Second)).Refresh(context.Background()); err == nil {
		t.Error("a client certificate signed by another CA was accepted")
	}
	if err := client(t, other.CloudConfig(addr, 5*time.Second)).Refresh(context.Background()); err == nil {
		t.Error("the client trusted a server certificate of another CA")
	}
	if err := client(t, plain(addr)).Refresh(context.Background()); err == nil {
		t.Error("a plaintext client was served by the TLS server")
	}
}
