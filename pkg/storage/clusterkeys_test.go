package storage

import (
	"strings"
	"testing"
)

func TestSplitClusterKey(t *testing.T) {
	identity := strings.Repeat("ab", 32)
	for key, want := range map[string]*ClusterKey{
		"core/configmaps/2x9kq7z1/default/cm":                  {Resource: "core/configmaps", Cluster: "2x9kq7z1", Object: "default/cm"},
		"/core/namespaces/2x9kq7z1/default":                    {Resource: "core/namespaces", Cluster: "2x9kq7z1", Object: "default"},
		"core.kcp.io/logicalclusters/system:admin/cluster":     {Resource: "core.kcp.io/logicalclusters", Cluster: "system:admin", Object: "cluster"},
		"wild.dev/cowboys/customresources/2x9kq7z1/default/a":  {Resource: "wild.dev/cowboys/customresources", Cluster: "2x9kq7z1", Object: "default/a"},
		"wild.dev/cowboys/" + identity + "/2x9kq7z1/default/a": {Resource: "wild.dev/cowboys/" + identity, Cluster: "2x9kq7z1", Object: "default/a"},
		// A namespace may look like a cluster; its place tells.
		"core/configmaps/abc/2x9kq7z1/cm":           {Resource: "core/configmaps", Cluster: "abc", Object: "2x9kq7z1/cm"},
		"core/configmaps/2x9kq7z1":                  nil,
		"wild.dev/cowboys/customresources/2x9kq7z1": nil,
		"core/configmaps/Not_A_Cluster/cm":          nil,
		"compact_rev_key":                           nil,
	} {
		got, ok := SplitClusterKey(key)
		if want == nil {
			if ok {
				t.Errorf("SplitClusterKey(%q) = %+v, want no cluster key", key, got)
			}
			continue
		}
		if !ok || got != *want {
			t.Errorf("SplitClusterKey(%q) = %+v, %v; want %+v", key, got, ok, *want)
		}
		if ok && got.String() != strings.TrimPrefix(key, "/") {
			t.Errorf("%+v joins to %q, want %q", got, got.String(), key)
		}
	}
}
