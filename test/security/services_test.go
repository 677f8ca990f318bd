package security

import (
	"net/http"
	"testing"
)

// TestCacheServerAndViewsRefuseTenants: a tenant reaches neither the cache
// server (directly, or through the front-proxy) nor another tenant's
// workspace through the virtual workspaces — the APIExport view of an
// export in the victim's workspace, the schemas the victim binds, or the
// initializing and terminating views of a type there — nor learns the
// victim's objects from them.
func TestCacheServerAndViewsRefuseTenants(t *testing.T) {
	ctx := testContext(t)
	a, b := twoTenants(t)
	token := sys.UserToken(a.user)
	var probes []probe
	for _, base := range []string{sys.CacheURL(t), sys.URL(t)} {
		for _, path := range []string{
			"/services/cache/shards/*/clusters/*/apis/apis.kcp.io/v1alpha2/apiexports",
			"/services/cache/shards/*/clusters/*/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
			"/services/cache/shards/" + b.shard + "/clusters/" + b.cluster.String() + "/apis/tenancy.kcp.io/v1alpha1/workspacetypes",
		} {
			probes = append(probes,
				probe{what: "tenant reads the cache server", method: http.MethodGet, base: base, path: path, header: bearer(token), victim: b, expect: refused},
				probe{what: "tenant writes the cache server", method: http.MethodPost, base: base, path: path, header: bearer(token, "Content-Type", "application/json"),
					body: []byte(`{"apiVersion":"apis.kcp.io/v1alpha2","kind":"APIExport","metadata":{"name":"forged"}}`), victim: b, expect: refused},
			)
		}
	}
	for _, base := range []string{sys.URL(t), sys.ShardURL(t, b.shard)} {
		for _, path := range []string{
			"/services/apiexport/" + b.cluster.String() + "/anything/clusters/*/api/v1/configmaps",
			"/services/apiexport/" + b.cluster.String() + "/anything/clusters/" + b.cluster.String() + "/api/v1/namespaces/default/configmaps/" + b.configMap(),
			"/services/initializingworkspaces/" + b.cluster.String() + ":anything/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters",
			"/services/terminatingworkspaces/" + b.cluster.String() + ":anything/clusters/" + b.cluster.String() + "/api/v1/namespaces/default/configmaps",
			"/shards/" + b.shard + "/services/apiexport/" + b.cluster.String() + "/anything/clusters/*/api/v1/configmaps",
			"/services/apiresourceschema/" + b.cluster.String() + "/clusters/*/apis/apis.kcp.io/v1alpha1/apiresourceschemas",
			"/shards/" + b.shard + "/services/apiresourceschema/" + b.cluster.String() + "/clusters/" + b.cluster.String() + "/apis",
		} {
			probes = append(probes, probe{what: "tenant uses a view into another tenant", method: http.MethodGet, base: base, path: path, header: bearer(token), victim: b, expect: refused})
		}
	}
	runAll(ctx, t, probes)
}
