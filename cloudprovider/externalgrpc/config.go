package externalgrpc

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"sigs.k8s.io/yaml"
)

// DefaultTimeout bounds each call when the cloud config sets no
// grpc_timeout, as in Cluster Autoscaler.
const DefaultTimeout = 5 * time.Second

// Config is the --cloud-config file, in Cluster Autoscaler's format for
// its externalgrpc provider.
type Config struct {
	// Address is the server's host:port.
	Address string `json:"address"`
	// Key, Cert and Cacert are paths of PEM files: tidal's client key and
	// certificate, and the CA that signed the server's certificate. With
	// Cert set the connection uses mutual TLS; without, it is plaintext.
	Key    string `json:"key"`
	Cert   string `json:"cert"`
	Cacert string `json:"cacert"`
	// Timeout bounds each call (grpc_timeout, a Go duration: "10s").
	Timeout time.Duration `json:"-"`
}

// rawConfig is the file as written, before the duration is parsed.
type rawConfig struct {
	Address     string `json:"address"`
	Key         string `json:"key"`
	Cert        string `json:"cert"`
	Cacert      string `json:"cacert"`
	GRPCTimeout string `json:"grpc_timeout"`
}

// ParseConfig reads a cloud config file's content; file names a file for
// the messages. Only the fields are checked; the TLS files are read by
// DialOptions.
func ParseConfig(file string, data []byte) (Config, error) {
	var raw rawConfig
	if err := yaml.UnmarshalStrict(data, &raw); err != nil {
		return Config{}, fmt.Errorf("cloud config %s: %w", file, err)
	}
	cfg := Config{Address: raw.Address, Key: raw.Key, Cert: raw.Cert, Cacert: raw.Cacert, Timeout: DefaultTimeout}
	if cfg.Address == "" {
		return Config{}, fmt.Errorf("cloud config %s: address: missing (want host:port of the provider server)", file)
	}
	if _, _, err := net.SplitHostPort(cfg.Address); err != nil {
		return Config{}, fmt.Errorf("cloud config %s: address %q: %w", file, cfg.Address, err)
	}
	if raw.GRPCTimeout != "" {
		d, err := time.ParseDuration(raw.GRPCTimeout)
		if err != nil || d <= 0 {
			return Config{}, fmt.Errorf("cloud config %s: grpc_timeout %q: want a positive duration such as 10s", file, raw.GRPCTimeout)
		}
		cfg.Timeout = d
	}
	if cfg.Cert != "" && (cfg.Key == "" || cfg.Cacert == "") {
		return Config{}, fmt.Errorf("cloud config %s: cert is set, so key and cacert are needed too (mutual TLS)", file)
	}
	if cfg.Cert == "" && (cfg.Key != "" || cfg.Cacert != "") {
		return Config{}, fmt.Errorf("cloud config %s: key or cacert is set without cert: set cert for TLS, or none of them", file)
	}
	return cfg, nil
}

// LoadConfig reads and parses the cloud config file at path.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("cloud config: %w", err)
	}
	return ParseConfig(path, data)
}

// DialOptions are the connection's credentials: mutual TLS with the
// config's files, or plaintext when it names no certificate.
func (c Config) DialOptions() ([]grpc.DialOption, error) {
	if c.Cert == "" {
		return []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, nil
	}
	tlsCfg, err := c.tlsConfig()
	if err != nil {
		return nil, err
	}
	return []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg))}, nil
}

func (c Config) tlsConfig() (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(c.Cert, c.Key)
	if err != nil {
		return nil, fmt.Errorf("cloud config: cert %s / key %s: %w", c.Cert, c.Key, err)
	}
	pem, err := os.ReadFile(c.Cacert)
	if err != nil {
		return nil, fmt.Errorf("cloud config: cacert: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("cloud config: cacert %s: no PEM certificate in it", c.Cacert)
	}
	host, _, _ := net.SplitHostPort(c.Address)
	return &tls.Config{
		ServerName: host, Certificates: []tls.Certificate{pair}, RootCAs: pool, MinVersion: tls.VersionTLS12,
	}, nil
}
