package framework

import (
	"strings"
	"testing"
)

const metricsPage = `# HELP go_goroutines Number of goroutines.
# TYPE go_goroutines gauge
go_goroutines 42
# HELP requests_total Requests.
# TYPE requests_total counter
requests_total{code="200",verb="GET"} 7
requests_total{code="500",verb="GET"} 1
# HELP wait_seconds Wait.
# TYPE wait_seconds histogram
wait_seconds_bucket{name="a",le="1"} 1
wait_seconds_bucket{name="a",le="+Inf"} 2
wait_seconds_sum{name="a"} 3.5
wait_seconds_count{name="a"} 2
wait_seconds_bucket{name="b",le="1"} 0
wait_seconds_bucket{name="b",le="+Inf"} 1
wait_seconds_sum{name="b"} 4
wait_seconds_count{name="b"} 1
`

func TestMetricsReadValuesHistogramsAndSamples(t *testing.T) {
	m, err := ParseMetrics(strings.NewReader(metricsPage))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := m.Value("go_goroutines", nil); !ok || v != 42 {
		t.Errorf("go_goroutines = %v, %v", v, ok)
	}
	if v, ok := m.Value("requests_total", map[string]string{"code": "500"}); !ok || v != 1 {
		t.Errorf("requests_total{code=500} = %v, %v", v, ok)
	}
	if _, ok := m.Value("missing", nil); ok {
		t.Error("a missing metric has a value")
	}
	if sum, count := m.HistogramTotals("wait_seconds", nil); sum != 7.5 || count != 3 {
		t.Errorf("wait_seconds totals = %v, %v", sum, count)
	}
	if sum, count := m.HistogramTotals("wait_seconds", map[string]string{"name": "b"}); sum != 4 || count != 1 {
		t.Errorf("wait_seconds{name=b} totals = %v, %v", sum, count)
	}
	if got := m.Samples(); got != 11 {
		t.Errorf("Samples() = %d, want 11", got)
	}
	names := m.SampleNames()
	for _, want := range []string{"go_goroutines", "requests_total", "wait_seconds_bucket", "wait_seconds_sum", "wait_seconds_count"} {
		if !names[want] {
			t.Errorf("SampleNames() lacks %s: %v", want, names)
		}
	}
}

func TestParseMetricsRefusesWhatIsNotPrometheusText(t *testing.T) {
	if _, err := ParseMetrics(strings.NewReader("<html>not metrics</html>\n")); err == nil {
		t.Error("an HTML page parsed as metrics")
	}
}
