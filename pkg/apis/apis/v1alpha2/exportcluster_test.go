package v1alpha2

import (
	"testing"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func TestExportClusterResolvesPathsOrTakesAClusterName(t *testing.T) {
	resolve := func(p logicalcluster.Path) (logicalcluster.Name, bool) {
		if p == "root:team" {
			return "abc123", true
		}
		return "", false
	}
	for _, tc := range []struct {
		name   string
		path   logicalcluster.Path
		want   logicalcluster.Name
		wantOK bool
	}{
		{"no path is the binding's own cluster", "", "binding", true},
		{"a known path resolves", "root:team", "abc123", true},
		{"an unknown single segment is a cluster name", "xyz789", "xyz789", true},
		{"an unknown path resolves to nothing", "root:nowhere", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := ExportCluster(resolve, "binding", tc.path)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("ExportCluster(%q) = %q, %v; want %q, %v", tc.path, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
