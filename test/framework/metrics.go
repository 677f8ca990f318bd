package framework

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics are the metric families of one /metrics page, by name.
type Metrics map[string]*dto.MetricFamily

// ParseMetrics parses a page in the Prometheus text format.
func ParseMetrics(r io.Reader) (Metrics, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	return families, nil
}

// ScrapeMetrics reads and parses the /metrics page at url with client,
// sending token as a bearer token when it is not empty.
func ScrapeMetrics(ctx context.Context, client *http.Client, url, token string) (Metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return ParseMetrics(resp.Body)
}

// Value returns the value of the first counter, gauge or untyped series of
// name that carries every one of labels, and whether there is one.
func (m Metrics) Value(name string, labels map[string]string) (float64, bool) {
	for _, s := range m.series(name, labels) {
		switch {
		case s.Counter != nil:
			return s.Counter.GetValue(), true
		case s.Gauge != nil:
			return s.Gauge.GetValue(), true
		case s.Untyped != nil:
			return s.Untyped.GetValue(), true
		}
	}
	return 0, false
}

// HistogramTotals returns the sum and count of the observations of the
// histogram name, over its series that carry every one of labels.
func (m Metrics) HistogramTotals(name string, labels map[string]string) (sum, count float64) {
	for _, s := range m.series(name, labels) {
		if h := s.Histogram; h != nil {
			sum += h.GetSampleSum()
			count += float64(h.GetSampleCount()) + h.GetSampleCountFloat()
		}
	}
	return sum, count
}

// SampleNames returns the names of the sample lines of the page: a
// histogram's are <name>_bucket, <name>_sum and <name>_count, a summary's
// <name>, <name>_sum and <name>_count.
func (m Metrics) SampleNames() map[string]bool {
	names := map[string]bool{}
	for name, f := range m {
		if len(f.Metric) == 0 {
			continue
		}
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			names[name], names[name+"_sum"], names[name+"_count"] = true, true, true
		default:
			names[name] = true
		}
	}
	return names
}

// Samples counts the sample lines of the page.
func (m Metrics) Samples() int {
	n := 0
	for _, f := range m {
		for _, s := range f.Metric {
			switch {
			case s.Histogram != nil:
				n += len(s.Histogram.Bucket) + 2
			case s.Summary != nil:
				n += len(s.Summary.Quantile) + 2
			default:
				n++
			}
		}
	}
	return n
}

// series returns the series of name that carry every one of labels.
func (m Metrics) series(name string, labels map[string]string) []*dto.Metric {
	f, ok := m[name]
	if !ok {
		return nil
	}
	var out []*dto.Metric
	for _, s := range f.Metric {
		have := 0
		for _, l := range s.Label {
			if v, ok := labels[l.GetName()]; ok && v == l.GetValue() {
				have++
			}
		}
		if have == len(labels) {
			out = append(out, s)
		}
	}
	return out
}

// Metrics scrapes the shard's /metrics as shard-admin; the test fails if
// it cannot.
func (s *Shard) Metrics(ctx context.Context, t testing.TB) Metrics {
	t.Helper()
	m, err := ScrapeMetrics(ctx, s.HTTPClient(t), s.BaseURL(t)+"/metrics", s.KubeconfigToken(t, "shard-admin"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
