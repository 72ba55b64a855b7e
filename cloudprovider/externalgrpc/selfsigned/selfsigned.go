// Package selfsigned makes a throw-away certificate authority with a
// server certificate for the loopback address and a client certificate,
// written as PEM files, so that a local externalgrpc server and its client
// talk mutual TLS. It is for local runs and tests, not for production.
package selfsigned

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Files are the paths of the PEM files Write makes.
type Files struct {
	CACert     string
	ServerCert string
	ServerKey  string
	ClientCert string
	ClientKey  string
}

// validity is how long the certificates are valid.
const validity = 24 * time.Hour

// Write makes a new CA in dir and, signed by it, a server certificate for
// 127.0.0.1 and localhost and a client certificate.
func Write(dir string) (Files, error) {
	f := Files{
		CACert:     filepath.Join(dir, "ca.crt"),
		ServerCert: filepath.Join(dir, "server.crt"), ServerKey: filepath.Join(dir, "server.key"),
		ClientCert: filepath.Join(dir, "client.crt"), ClientKey: filepath.Join(dir, "client.key"),
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tidal externalgrpc CA"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(validity),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Files{}, fmt.Errorf("selfsigned: CA key: %w", err)
	}
	if err := writeCert(f.CACert, "", ca, ca, caKey, caKey); err != nil {
		return Files{}, err
	}
	server := leaf(2, "tidal externalgrpc server", now, x509.ExtKeyUsageServerAuth)
	server.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	server.DNSNames = []string{"localhost"}
	if err := issue(f.ServerCert, f.ServerKey, server, ca, caKey); err != nil {
		return Files{}, err
	}
	client := leaf(3, "tidal externalgrpc client", now, x509.ExtKeyUsageClientAuth)
	return f, issue(f.ClientCert, f.ClientKey, client, ca, caKey)
}

func leaf(serial int64, name string, now time.Time, usage x509.ExtKeyUsage) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(validity),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
}

func issue(certFile, keyFile string, tmpl, ca *x509.Certificate, caKey *ecdsa.PrivateKey) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("selfsigned: key for %s: %w", tmpl.Subject.CommonName, err)
	}
	return writeCert(certFile, keyFile, tmpl, ca, key, caKey)
}

// writeCert signs tmpl's certificate of key with caKey and writes it, and
// the key when keyFile is set.
func writeCert(certFile, keyFile string, tmpl, ca *x509.Certificate, key, caKey *ecdsa.PrivateKey) error {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("selfsigned: certificate %s: %w", tmpl.Subject.CommonName, err)
	}
	if err := writePEM(certFile, "CERTIFICATE", der); err != nil {
		return err
	}
	if keyFile == "" {
		return nil
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("selfsigned: key %s: %w", tmpl.Subject.CommonName, err)
	}
	return writePEM(keyFile, "EC PRIVATE KEY", keyDER)
}

func writePEM(path, kind string, der []byte) error {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("selfsigned: %w", err)
	}
	return nil
}

// CloudConfig is a cloud config file's content for a client of the server
// at address with these files.
func (f Files) CloudConfig(address string, timeout time.Duration) string {
	return fmt.Sprintf("address: %q\ncert: %q\nkey: %q\ncacert: %q\ngrpc_timeout: %q\n",
		address, f.ClientCert, f.ClientKey, f.CACert, timeout.String())
}
