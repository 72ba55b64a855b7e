package localcluster

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// startEtcd runs an embedded etcd on free loopback ports, storing its data
// under dir. It returns the client URL and a function that stops it.
func startEtcd(ctx context.Context, dir string) (string, func(), error) {
	clientURL, err := freeLoopbackURL()
	if err != nil {
		return "", nil, err
	}
	peerURL, err := freeLoopbackURL()
	if err != nil {
		return "", nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = "localcluster"
	cfg.Dir = filepath.Join(dir, "etcd")
	cfg.UnsafeNoFsync = true
	cfg.ListenClientUrls = []url.URL{*clientURL}
	cfg.AdvertiseClientUrls = []url.URL{*clientURL}
	cfg.ListenPeerUrls = []url.URL{*peerURL}
	cfg.AdvertisePeerUrls = []url.URL{*peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return "", nil, fmt.Errorf("start embedded etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return "", nil, fmt.Errorf("embedded etcd failed while starting: %w", err)
	case <-time.After(30 * time.Second):
		e.Close()
		return "", nil, fmt.Errorf("embedded etcd not ready after 30s")
	case <-ctx.Done():
		e.Close()
		return "", nil, ctx.Err()
	}
	return clientURL.String(), e.Close, nil
}

func freeLoopbackURL() (*url.URL, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	return &url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", port)}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
