package app

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// MetricValue reads one sample (name and labels exactly as exposed, such as
// `tidal_scale_ups_total{node_group="a"}`) from tidal's /metrics at addr; a
// sample not exposed reads 0.
func MetricValue(addr, sample string) (float64, error) {
	var v float64
	err := scrape(addr, func(line string) error {
		if rest, ok := strings.CutPrefix(line, sample+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			v = f
			return err
		}
		return nil
	})
	return v, err
}

// MetricSum adds up every sample of a metric at addr, whatever its labels.
func MetricSum(addr, name string) (float64, error) { return metricSum(addr, name) }

// metricSum adds up every sample of a metric, whatever its labels.
func metricSum(addr, name string) (float64, error) {
	var sum float64
	err := scrape(addr, func(line string) error {
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			return nil
		}
		f, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		sum += f
		return err
	})
	return sum, err
}

func scrape(addr string, each func(line string) error) error {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET http://%s/metrics: %s", addr, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if err := each(sc.Text()); err != nil {
			return fmt.Errorf("metrics of %s: %w", addr, err)
		}
	}
	return sc.Err()
}
