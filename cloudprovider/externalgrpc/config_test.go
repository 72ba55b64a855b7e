package externalgrpc_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidal-autoscaler/tidal/cloudprovider/externalgrpc"
)

func TestParseConfig(t *testing.T) {
	cfg, err := externalgrpc.ParseConfig("c.yaml", []byte("address: 127.0.0.1:8086\n"))
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	if cfg.Timeout != externalgrpc.DefaultTimeout || cfg.Cert != "" {
		t.Errorf("config %+v: want the default timeout %v and no TLS", cfg, externalgrpc.DefaultTimeout)
	}
	cfg, err = externalgrpc.ParseConfig("c.yaml", []byte("address: h:1\ncert: c\nkey: k\ncacert: ca\ngrpc_timeout: 250ms\n"))
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	if cfg.Timeout != 250*time.Millisecond || cfg.Cert != "c" || cfg.Key != "k" || cfg.Cacert != "ca" {
		t.Errorf("config %+v: want cert c, key k, cacert ca, timeout 250ms", cfg)
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"no address", "grpc_timeout: 1s\n", "address: missing"},
		{"address without port", "address: localhost\n", `address "localhost"`},
		{"bad duration", "address: h:1\ngrpc_timeout: soon\n", `grpc_timeout "soon"`},
		{"negative duration", "address: h:1\ngrpc_timeout: -1s\n", `grpc_timeout "-1s"`},
		{"cert without key", "address: h:1\ncert: c\ncacert: ca\n", "key and cacert are needed"},
		{"key without cert", "address: h:1\nkey: k\n", "without cert"},
		{"unknown field", "address: h:1\ntimeout: 1s\n", "timeout"},
		{"not yaml", "address: [\n", "c.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := externalgrpc.ParseConfig("c.yaml", []byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseConfig(%q) = %v, want an error containing %q", tc.text, err, tc.want)
			}
		})
	}
}

func TestDialOptionsErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.crt")
	for _, tc := range []struct {
		name string
		cfg  externalgrpc.Config
		want string
	}{
		{"unreadable cert", externalgrpc.Config{Address: "h:1", Cert: missing, Key: missing, Cacert: missing}, "cert " + missing},
		{"cert not PEM", externalgrpc.Config{Address: "h:1", Cert: notPEM, Key: notPEM, Cacert: notPEM}, "cert " + notPEM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.cfg.DialOptions()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("DialOptions() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := externalgrpc.LoadConfig(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("LoadConfig of a missing file = %v, want an error naming it", err)
	}
}
