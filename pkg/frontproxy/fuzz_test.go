package frontproxy

import (
	"net/http"
	"strings"
	"testing"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// FuzzSplitClusterPath checks that the front-proxy's split of /clusters/
// paths (logicalcluster.SplitRequestPath) gives what they spell, and the
// same as the shards' strict parse (logicalcluster.ParseRequestPath) for
// every path a shard accepts: a request is routed to the workspace that
// then serves it.
func FuzzSplitClusterPath(f *testing.F) {
	for _, s := range []string{
		"/clusters/root/api/v1/namespaces", "/clusters/root:org:team/apis/apps/v1/deployments",
		"/clusters/*/api/v1/configmaps", "/clusters/system:admin/apis", "/clusters/root", "/clusters/root/",
		"/clusters/", "/clusters//api", "/clusters/../api", "/clusters/root/../other/api",
		"/clusters/root/clusters/other/api", "/clusters/a/b/c", "/clusters/ü/api",
		"/clusters/" + strings.Repeat("a:", 100) + "a/api/v1/pods", "/services/x/clusters/root/api/v1/pods",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		_ = isWatch(http.MethodGet, p, "watch=true")
		if !strings.HasPrefix(p, ClustersPath) {
			return
		}
		path, rest, ok := logicalcluster.SplitRequestPath(p)
		if !strings.HasPrefix(rest, "/") {
			t.Fatalf("SplitRequestPath(%q) returned rest %q without a leading slash", p, rest)
		}
		if ok != (path != "") || strings.Contains(path, "/") {
			t.Fatalf("SplitRequestPath(%q) = %q %q %v", p, path, rest, ok)
		}
		if built := ClustersPath + path + rest; ok && built != p && built != p+"/" {
			t.Fatalf("SplitRequestPath(%q) = %q %q, which builds %q", p, path, rest, built)
		}
		segment, shardRest, err := logicalcluster.ParseRequestPath(p, "")
		if err == nil && (!ok || path != string(segment) || rest != shardRest) {
			t.Fatalf("the front-proxy splits %q into %q %q %v, a shard into %q %q", p, path, rest, ok, segment, shardRest)
		}
	})
}
