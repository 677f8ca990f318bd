package cacheserver

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func TestPathsNameShardAndClusterOrAreRefused(t *testing.T) {
	for _, tc := range []struct {
		path           string
		shard          cacheclient.Shard
		cluster        logicalcluster.Name
		rest           string
		unscoped, fail bool
	}{
		{path: "/services/cache/shards/s1/clusters/c1/apis/apis.kcp.io/v1alpha2/apiexports", shard: "s1", cluster: "c1", rest: "/apis/apis.kcp.io/v1alpha2/apiexports"},
		{path: "/shards/s1/clusters/c1/apis", shard: "s1", cluster: "c1", rest: "/apis"},
		{path: "/services/cache/shards/*/clusters/*/apis/rbac.authorization.k8s.io/v1/clusterroles", shard: "*", cluster: "*", rest: "/apis/rbac.authorization.k8s.io/v1/clusterroles"},
		{path: "/services/cache/shards/system:cache:server/clusters/system:admin", shard: "system:cache:server", cluster: "system:admin", rest: "/"},
		{path: "/services/cache/shards/s1/clusters/root/", shard: "s1", cluster: "root", rest: "/"},
		{path: "/healthz", unscoped: true},
		{path: "/readyz/etcd", unscoped: true},
		{path: "/services/cache/livez", unscoped: true},
		{path: "/metrics", unscoped: true},
		{path: "/apis/apis.kcp.io/v1alpha2/apiexports", fail: true},
		{path: "/services/cache/clusters/c1/apis", fail: true},
		{path: "/services/cache/shards/s1", fail: true},
		{path: "/services/cache/shards/s1/apis", fail: true},
		{path: "/services/cache/shards//clusters/c1/apis", fail: true},
		{path: "/services/cache/shards/S1/clusters/c1/apis", fail: true},
		{path: "/services/cache/shards/s1/clusters/root:org/apis", fail: true},
		{path: "/services/cache/shards/s1/clusters//apis", fail: true},
		{path: "/services/cache/shards/s1/clusters/c1/apis/../x", fail: true},
		{path: "/", fail: true},
	} {
		sc, scoped, err := parsePath(tc.path)
		switch {
		case tc.fail:
			if err == nil {
				t.Errorf("%s: parsed as %+v, want an error", tc.path, sc)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.path, err)
		case tc.unscoped:
			if scoped {
				t.Errorf("%s: scoped %+v, want a process-wide path", tc.path, sc)
			}
		case !scoped || sc.shard != tc.shard || sc.cluster != tc.cluster || sc.rest != tc.rest:
			t.Errorf("%s: shard %q cluster %q rest %q (scoped %t), want %q %q %q", tc.path, sc.shard, sc.cluster, sc.rest, scoped, tc.shard, tc.cluster, tc.rest)
		}
	}
}

func TestScopeFilterStripsThePrefixAndSetsTheContext(t *testing.T) {
	var got *http.Request
	h := withScope(http.HandlerFunc(func(_ http.ResponseWriter, req *http.Request) { got = req }), codecs)
	for _, tc := range []struct {
		uri, path, requestURI string
		shard                 cacheclient.Shard
		cluster               logicalcluster.Name
		code                  int
	}{
		{uri: "/services/cache/shards/s1/clusters/c1/apis/g/v1/things?watch=true", path: "/apis/g/v1/things", requestURI: "/apis/g/v1/things?watch=true", shard: "s1", cluster: "c1", code: http.StatusOK},
		{uri: "/services/cache/shards/*/clusters/c1?x=1", path: "/", requestURI: "/?x=1", shard: "*", cluster: "c1", code: http.StatusOK},
		{uri: "/services/cache/healthz", path: "/healthz", requestURI: "/healthz", code: http.StatusOK},
		{uri: "/readyz", path: "/readyz", requestURI: "/readyz", code: http.StatusOK},
		{uri: "/apis/g/v1/things", code: http.StatusBadRequest},
		{uri: "/services/cache/shards/s1/clusters/c1/metrics", code: http.StatusNotImplemented},
		{uri: "/services/cache/shards/s%31/clusters/c1/apis", code: http.StatusBadRequest},
	} {
		got = nil
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.uri, nil))
		if rec.Code != tc.code {
			t.Errorf("%s: code %d, want %d: %s", tc.uri, rec.Code, tc.code, rec.Body)
			continue
		}
		if tc.code != http.StatusOK {
			if got != nil {
				t.Errorf("%s: passed on after refusing it", tc.uri)
			}
			continue
		}
		if got == nil {
			t.Errorf("%s: not passed on", tc.uri)
			continue
		}
		if got.URL.Path != tc.path || got.RequestURI != tc.requestURI {
			t.Errorf("%s: path %q request URI %q, want %q %q", tc.uri, got.URL.Path, got.RequestURI, tc.path, tc.requestURI)
		}
		shard, _ := ShardFromContext(got.Context())
		cluster, _ := logicalcluster.ClusterFromContext(got.Context())
		if shard != tc.shard || cluster != tc.cluster {
			t.Errorf("%s: shard %q cluster %q in the context, want %q %q", tc.uri, shard, cluster, tc.shard, tc.cluster)
		}
	}
}

func TestURLNamesShardAndCluster(t *testing.T) {
	if got, want := cacheclient.URL("https://cache:6443/", "s1", logicalcluster.Wildcard), "https://cache:6443/services/cache/shards/s1/clusters/*"; got != want {
		t.Errorf("URL = %q, want %q", got, want)
	}
	sc, ok, err := parsePath(cacheclient.Path(cacheclient.WildcardShard, "root") + "/apis")
	if err != nil || !ok || sc.shard != cacheclient.WildcardShard || sc.cluster != "root" {
		t.Errorf("Path does not parse back: %+v %t %v", sc, ok, err)
	}
}
