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

// etcdReadyTimeout bounds the wait for the embedded etcd's readiness, which
// takes a second on an idle machine and much longer on a busy one.
const etcdReadyTimeout = 2 * time.Minute

// startEtcd runs an embedded etcd on loopback ports (free ones where a
// port is 0), storing its data under dir. It returns the client URL and a
// function that stops it.
func startEtcd(ctx context.Context, dir string, clientPort, peerPort int) (string, func(), error) {
	clientURL, err := loopbackURL(clientPort)
	if err != nil {
		return "", nil, err
	}
	peerURL, err := loopbackURL(peerPort)
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
	case <-time.After(etcdReadyTimeout):
		e.Close()
		return "", nil, fmt.Errorf("embedded etcd not ready after %v", etcdReadyTimeout)
	case <-ctx.Done():
		e.Close()
		return "", nil, ctx.Err()
	}
	return clientURL.String(), e.Close, nil
}

// loopbackURL is http://127.0.0.1:port, on a free port when port is 0.
func loopbackURL(port int) (*url.URL, error) {
	if port == 0 {
		var err error
		if port, err = freePort(); err != nil {
			return nil, err
		}
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
