package localcluster

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// Pinned etcd ports are the ones etcd listens on.
func TestEtcdOnPinnedPorts(t *testing.T) {
	client, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	peer, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clientURL, stop, err := startEtcd(ctx, t.TempDir(), client, peer)
	if err != nil {
		t.Fatalf("etcd on client port %d, peer port %d: %v", client, peer, err)
	}
	defer stop()
	u, err := url.Parse(clientURL)
	if err != nil || u.Port() != strconv.Itoa(client) {
		t.Errorf("client URL %s (%v), want port %d", clientURL, err, client)
	}
	for _, port := range []int{client, peer} {
		conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 5*time.Second)
		if err != nil {
			t.Errorf("nothing listens on pinned port %d: %v", port, err)
			continue
		}
		_ = conn.Close()
	}
}
