package localcluster

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"strings"
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

// A free port taken by another process before etcd binds it costs a start,
// not the cluster: etcd starts again on other free ports.
func TestEtcdStartsAgainWhenAFreePortWasTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port
	picks := 0
	pick := func() (int, error) {
		picks++
		if picks == 1 {
			return takenPort, nil
		}
		return freePort()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clientURL, stop, err := startEtcdPicking(ctx, t.TempDir(), 0, 0, pick)
	if err != nil {
		t.Fatalf("etcd after its first client port %d was taken: %v", takenPort, err)
	}
	defer stop()
	u, err := url.Parse(clientURL)
	if err != nil || u.Port() == strconv.Itoa(takenPort) {
		t.Errorf("client URL %s (%v): want a port other than the taken %d", clientURL, err, takenPort)
	}
	if picks != 4 {
		t.Errorf("%d ports picked, want 4 (client and peer, twice)", picks)
	}
}

// A pinned port that is taken is an error at once, naming the port.
func TestEtcdOnATakenPinnedPortFails(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port
	peer, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, stop, err := startEtcd(ctx, t.TempDir(), takenPort, peer)
	if err == nil {
		stop()
		t.Fatalf("etcd started on taken pinned port %d", takenPort)
	}
	if !strings.Contains(err.Error(), strconv.Itoa(takenPort)) {
		t.Errorf("error %q does not name the taken port %d", err, takenPort)
	}
}
