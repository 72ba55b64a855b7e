package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// etcdReadyTimeout bounds the wait for the embedded etcd's readiness, which
// takes a second on an idle machine and much longer on a busy one.
const etcdReadyTimeout = 2 * time.Minute

// freePortAttempts bounds the starts of etcd on ports found free, each
// of which another process may have taken in the meantime.
const freePortAttempts = 5

// startEtcd runs an embedded etcd on loopback ports (free ones where a
// port is 0), storing its data under dir. It returns the client URL and a
// function that stops it.
func startEtcd(ctx context.Context, dir string, clientPort, peerPort int) (string, func(), error) {
	return startEtcdPicking(ctx, dir, clientPort, peerPort, freePort)
}

// startEtcdPicking is startEtcd with the free ports chosen by pick. etcd
// takes addresses, not listeners, so a port found free is let go before
// etcd binds it and another process may take it in between: a start that
// finds a port it picked taken is made again on newly picked ones (its
// data directory is untouched, as etcd binds its ports before it opens
// its data). A taken pinned port is an error at once.
func startEtcdPicking(ctx context.Context, dir string, clientPort, peerPort int, pick func() (int, error)) (string, func(), error) {
	for attempt := 1; ; attempt++ {
		url, stop, err := startEtcdOnce(ctx, dir, clientPort, peerPort, pick)
		if err == nil || !errors.Is(err, syscall.EADDRINUSE) || (clientPort != 0 && peerPort != 0) {
			return url, stop, err
		}
		if attempt == freePortAttempts {
			return "", nil, fmt.Errorf("%d starts on free ports found them taken: %w", attempt, err)
		}
	}
}

func startEtcdOnce(ctx context.Context, dir string, clientPort, peerPort int, pick func() (int, error)) (string, func(), error) {
	clientURL, err := loopbackURL(clientPort, pick)
	if err != nil {
		return "", nil, err
	}
	peerURL, err := loopbackURL(peerPort, pick)
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

// loopbackURL is http://127.0.0.1:port, on a port from pick when port is 0.
func loopbackURL(port int, pick func() (int, error)) (*url.URL, error) {
	if port == 0 {
		var err error
		if port, err = pick(); err != nil {
			return nil, err
		}
	}
	return &url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", port)}, nil
}

// freePort is a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
