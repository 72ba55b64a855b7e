package localapp

import (
	"fmt"
	"net"
	"strings"
	"testing"
)

// A busy API server port is a plain error from tidal-local, naming the
// port, not a panic in the cluster's clean-up.
func TestLocalReportsABusyAPIServerPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	err = execute("--demo=false", "--duration=30s", "--leader-elect=false", "--address=127.0.0.1:0",
		fmt.Sprintf("--api-server-port=%d", port))
	want := fmt.Sprintf("listen for kube-apiserver on 127.0.0.1:%d", port)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("error = %v, want it to contain %q and the reason", err, want)
	}
}
