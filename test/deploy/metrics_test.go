package deploy

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/shardplane/shardplane/test/framework"
)

// metricNames scrapes /metrics of every running pod of the release (the
// HTTPS servers as system:masters, which shards require; etcd on its
// metrics port) and returns the names of the series they export.
func (c *cluster) metricNames(t *testing.T) map[string]bool {
	t.Helper()
	client := c.clientWithCert(t, releaseName+"-shardplane-shard-root-tls", releaseName+"-shardplane-shard-client-tls")
	names := map[string]bool{}
	for _, p := range c.pods {
		var url string
		if cp, ok := p.containerPort("https"); ok {
			url = fmt.Sprintf("https://127.0.0.1:%d/metrics", p.ports[cp])
		} else if cp, ok := p.containerPort("metrics"); ok {
			url = fmt.Sprintf("http://127.0.0.1:%d/metrics", p.ports[cp])
		} else {
			t.Fatalf("pod %s serves no metrics", p.name)
		}
		// The whole page: a shard's is larger than get reads.
		m, err := framework.ScrapeMetrics(t.Context(), client, url, "")
		if err != nil {
			t.Fatalf("%s as system:masters: %v", p.name, err)
		}
		maps.Copy(names, m.SampleNames())
	}
	return names
}

// seriesSelector finds the metric names of a PromQL expression: every
// name followed by a label matcher.
var seriesSelector = regexp.MustCompile(`\b([a-zA-Z_:][a-zA-Z0-9_:]*)\{`)

// dashboardMetrics returns the metric names the chart's Grafana dashboard
// queries.
func dashboardMetrics(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(repoPath(t, "deploy/charts/shardplane/dashboards/shardplane.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dashboard struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dashboard); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	seen := map[string]bool{}
	for _, p := range dashboard.Panels {
		for _, target := range p.Targets {
			for _, m := range seriesSelector.FindAllStringSubmatch(target.Expr, -1) {
				seen[m[1]] = true
			}
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		t.Fatal("the dashboard queries no metrics")
	}
	return names
}

// checkDashboardMetrics fails when the dashboard queries a metric no
// running component exports. etcd's own metrics are only checked when the
// release runs etcd pods.
func (c *cluster) checkDashboardMetrics(t *testing.T) {
	t.Helper()
	exported := c.metricNames(t)
	etcdPods := false
	for _, p := range c.pods {
		etcdPods = etcdPods || p.component == "etcd"
	}
	for _, name := range dashboardMetrics(t) {
		if strings.HasPrefix(name, "etcd_mvcc_") && !etcdPods {
			continue
		}
		if !exported[name] {
			t.Errorf("the dashboard queries %s, which no component of the release exports", name)
		}
	}
}
