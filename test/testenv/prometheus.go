package testenv

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// Prometheus is a real Prometheus server run for one test.
type Prometheus struct {
	URL string
	API promv1.API
	log string
}

// StartPrometheus runs the prometheus binary (Debian package prometheus,
// installed by `make test-deps`) on a free loopback port until the test
// ends, scraping targets (host:port, path /metrics) and evaluating the rule
// files every second, and returns once it is ready. Without the binary the
// test is skipped, or fails under CI.
func StartPrometheus(t *testing.T, targets []string, ruleFiles ...string) *Prometheus {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the prometheus binary is not installed (Debian package prometheus; the Makefile installs it): %v", err)
		}
		t.Skipf("the prometheus binary is not installed (apt-get install -y prometheus): %v", err)
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf("global: {scrape_interval: 1s, evaluation_interval: 1s}\nrule_files: [%s]\n"+
		"scrape_configs:\n- job_name: test\n  static_configs:\n  - targets: [%s]\n", quoteAll(ruleFiles), quoteAll(targets))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &Prometheus{URL: "http://" + FreeAddress(t), log: filepath.Join(dir, "prometheus.log")}
	logFile, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+strings.TrimPrefix(p.URL, "http://"), "--log.level=warn")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		logFile.Close()
	})
	client, err := promapi.NewClient(promapi.Config{Address: p.URL})
	if err != nil {
		t.Fatal(err)
	}
	p.API = promv1.NewAPI(client)
	Poll(t, 60*time.Second, "Prometheus to be ready", func(ctx context.Context) (bool, error) {
		select {
		case err := <-exited:
			t.Fatalf("prometheus exited: %v\n%s", err, p.Log())
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/-/ready", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	return p
}

// Log is what the server logged so far.
func (p *Prometheus) Log() string {
	data, _ := os.ReadFile(p.log)
	return string(data)
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
