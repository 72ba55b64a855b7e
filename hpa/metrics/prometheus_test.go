package metrics

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// promServer answers /api/v1/query with a canned data section.
func promServer(t *testing.T, data *string, queries *[]string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" {
			http.NotFound(w, r)
			return
		}
		if err := r.ParseForm(); err != nil {
			t.Error(err)
		}
		*queries = append(*queries, r.Form.Get("query"))
		w.Header().Set("Content-Type", "application/json")
		if strings.HasPrefix(*data, "error:") {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"status":"error","errorType":"bad_data","error":%q}`, strings.TrimPrefix(*data, "error:"))
			return
		}
		fmt.Fprintf(w, `{"status":"success","data":%s}`, *data)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestPrometheusSource(t *testing.T) {
	var data string
	var queries []string
	p, err := NewPrometheus(promServer(t, &data, &queries), nil)
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Namespace: "ns", Metric: promMetric(`sum(queue_depth{app="web"})`)}
	ts := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Unix()
	for _, tc := range []struct {
		name, data string
		want       []int64
		err        string
	}{
		{"vector", fmt.Sprintf(`{"resultType":"vector","result":[{"metric":{"a":"1"},"value":[%v,"12.5"]},{"metric":{"a":"2"},"value":[%v,"0.0004"]}]}`, ts, ts), []int64{12500, 0}, ""},
		{"scalar", fmt.Sprintf(`{"resultType":"scalar","result":[%v,"3"]}`, ts), []int64{3000}, ""},
		{"empty vector", `{"resultType":"vector","result":[]}`, nil, "no samples"},
		{"range vector", fmt.Sprintf(`{"resultType":"matrix","result":[{"metric":{},"values":[[%v,"1"]]}]}`, ts), nil, "want an instant vector"},
		{"NaN", fmt.Sprintf(`{"resultType":"vector","result":[{"metric":{},"value":[%v,"NaN"]}]}`, ts), nil, "not a finite number"},
		{"server error", `error:parse error at char 3`, nil, "parse error at char 3"},
	} {
		data = tc.data
		d := p.Fetch(context.Background(), req)
		if tc.err != "" {
			if d.Err == nil || !strings.Contains(d.Err.Error(), tc.err) || !strings.Contains(d.Err.Error(), "queue_depth") {
				t.Errorf("%s: err %v, want one naming the query and containing %q", tc.name, d.Err, tc.err)
			}
			continue
		}
		if d.Err != nil || fmt.Sprint(d.ExternalValues) != fmt.Sprint(tc.want) || d.Timestamp.Unix() != ts {
			t.Errorf("%s: got %v at %v (err %v), want %v", tc.name, d.ExternalValues, d.Timestamp, d.Err, tc.want)
		}
	}
	if queries[0] != `sum(queue_depth{app="web"})` {
		t.Fatalf("query sent: %q", queries[0])
	}
	other := req
	other.Metric = cpuRequest("").Metric
	if d := p.Fetch(context.Background(), other); d.Err == nil {
		t.Fatal("a cpu metric was answered by Prometheus")
	}
}
