package security

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// servedResource is one resource (or subresource) the shard serves, with
// its verbs, from discovery.
type servedResource struct {
	gv         schema.GroupVersion
	resource   string // "configmaps" or "configmaps/status"
	kind       string
	namespaced bool
	verbs      []string
}

// servedResources lists every resource of every served group version in
// a workspace, through the front-proxy as kcp-admin.
func servedResources(t *testing.T, path logicalcluster.Path) []servedResource {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(sys.AdminConfig(t, path.String()))
	if err != nil {
		t.Fatal(err)
	}
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	var out []servedResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.APIResources {
			out = append(out, servedResource{gv: gv, resource: r.Name, kind: r.Kind, namespaced: r.Namespaced, verbs: r.Verbs})
		}
	}
	if len(out) < 20 {
		t.Fatalf("discovery found only %d resources", len(out))
	}
	return out
}

// resourcePath is the path of a resource below /clusters/<x>, of one
// object when name is set.
func (r servedResource) resourcePath(name string) string {
	prefix := "/apis/" + r.gv.String()
	if r.gv.Group == "" {
		prefix = "/api/" + r.gv.Version
	}
	if r.namespaced {
		prefix += "/namespaces/default"
	}
	main, sub, _ := strings.Cut(r.resource, "/")
	if sub != "" {
		return prefix + "/" + main + "/" + name + "/" + sub
	}
	if name != "" {
		return prefix + "/" + main + "/" + name
	}
	return prefix + "/" + main
}

// verbRequests are the HTTP requests of a verb on a resource: method,
// path below the cluster, query, body.
func (r servedResource) verbRequests(verb string) []probe {
	object := func() []byte {
		obj := map[string]interface{}{"apiVersion": r.gv.String(), "kind": r.kind, "metadata": map[string]interface{}{"name": "sec-probe", "namespace": "default"}}
		b, _ := json.Marshal(obj)
		return b
	}
	sub := strings.Contains(r.resource, "/")
	switch verb {
	case "get":
		return []probe{{method: http.MethodGet, path: r.resourcePath("sec-probe")}}
	case "list":
		if sub {
			return nil
		}
		return []probe{
			{method: http.MethodGet, path: r.resourcePath("")},
			{method: http.MethodGet, path: r.resourcePath(""), query: "resourceVersion=0"},
			{method: http.MethodGet, path: r.resourcePath(""), query: "labelSelector=app%3Dsec&limit=1"},
		}
	case "watch":
		if sub {
			return nil
		}
		return []probe{{method: http.MethodGet, path: r.resourcePath(""), query: "watch=1&timeoutSeconds=1&resourceVersion=0"}}
	case "create":
		if sub {
			return []probe{{method: http.MethodPost, path: r.resourcePath("sec-probe"), body: object()}}
		}
		return []probe{{method: http.MethodPost, path: r.resourcePath(""), body: object()}}
	case "update":
		return []probe{{method: http.MethodPut, path: r.resourcePath("sec-probe"), body: object()}}
	case "patch":
		return []probe{{method: http.MethodPatch, path: r.resourcePath("sec-probe"), body: []byte(`{"metadata":{"labels":{"sec":"probe"}}}`),
			header: http.Header{"Content-Type": {"application/merge-patch+json"}}}}
	case "delete":
		return []probe{{method: http.MethodDelete, path: r.resourcePath("sec-probe")}}
	case "deletecollection":
		return []probe{{method: http.MethodDelete, path: r.resourcePath("")}}
	}
	return nil
}

// entrances are the ways into a tenant's workspace: through the
// front-proxy by path and by logical cluster name, and directly at its
// shard (and, in the long run, at the other shard) by name.
func entrances(t *testing.T, victim *tenant) []struct{ base, cluster string } {
	out := []struct{ base, cluster string }{
		{sys.URL(t), victim.path.String()},
		{sys.URL(t), victim.cluster.String()},
		{sys.ShardURL(t, victim.shard), victim.cluster.String()},
	}
	if long {
		other := "root"
		if victim.shard == "root" {
			other = "shard-1"
		}
		out = append(out,
			struct{ base, cluster string }{sys.ShardURL(t, victim.shard), victim.path.String()},
			struct{ base, cluster string }{sys.ShardURL(t, other), victim.cluster.String()},
			struct{ base, cluster string }{sys.ShardURL(t, other), victim.path.String()},
		)
	}
	return out
}

// directions are attacker and victim pairs: a attacks b, and in the long
// run b attacks a too.
func directions(a, b *tenant) [][2]*tenant {
	if long {
		return [][2]*tenant{{a, b}, {b, a}}
	}
	return [][2]*tenant{{a, b}}
}

// TestEveryVerbOnEveryResourceOfAnotherTenantIsRefused: the attacker's
// token, every verb of every served resource, into the victim's
// workspace by every entrance: refused, no marker of the victim in the
// answer, never a 5xx. The same requests in the attacker's own workspace
// show no marker of the victim either.
func TestEveryVerbOnEveryResourceOfAnotherTenantIsRefused(t *testing.T) {
	ctx := testContext(t)
	a, b := twoTenants(t)
	resources := servedResources(t, a.path)
	var probes []probe
	for _, d := range directions(a, b) {
		attacker, victim := d[0], d[1]
		token := sys.UserToken(attacker.user)
		for _, r := range resources {
			for _, verb := range r.verbs {
				for _, req := range r.verbRequests(verb) {
					for _, in := range entrances(t, victim) {
						p := req
						p.what = fmt.Sprintf("%s %s %s/%s in %s's workspace", attacker.user, verb, r.gv, r.resource, victim.user)
						p.base, p.path = in.base, "/clusters/"+in.cluster+req.path
						p.header = mergeHeaders(bearer(token), req.header)
						p.victim, p.expect = victim, refused
						probes = append(probes, p)
					}
					// Reads in the attacker's own workspace.
					if verb == "list" || verb == "watch" || verb == "get" {
						p := req
						p.what = fmt.Sprintf("%s %s %s/%s in their own workspace", attacker.user, verb, r.gv, r.resource)
						p.base, p.path = sys.URL(t), "/clusters/"+attacker.path.String()+req.path
						p.header = mergeHeaders(bearer(token), req.header)
						p.victim, p.expect = victim, anyAnswer
						probes = append(probes, p)
					}
				}
			}
		}
	}
	runAll(ctx, t, probes)
	t.Logf("%d resources, %d probes", len(resources), len(probes))
}

func mergeHeaders(hs ...http.Header) http.Header {
	out := http.Header{}
	for _, h := range hs {
		for k, v := range h {
			out[k] = append(out[k], v...)
		}
	}
	return out
}

// TestPathTricksDoNotCrossWorkspaces: odd spellings of the cluster
// segment and of the path never reach the victim's workspace.
func TestPathTricksDoNotCrossWorkspaces(t *testing.T) {
	ctx := testContext(t)
	a, b := twoTenants(t)
	var probes []probe
	for _, d := range directions(a, b) {
		attacker, victim := d[0], d[1]
		own, other, name := attacker.path.String(), victim.path.String(), victim.cluster.String()
		long200 := strings.Repeat("a", 200)
		tricks := []string{
			"/clusters/" + own + "/../" + other + "/api/v1/namespaces/default/configmaps",
			"/clusters/" + own + "/%2e%2e/" + other + "/api/v1/namespaces/default/configmaps",
			"/clusters/" + own + "%2F..%2F" + other + "/api/v1/namespaces/default/configmaps",
			"/clusters/" + own + "%2f" + other + "/api/v1/namespaces/default/configmaps",
			"/clusters/" + other + "%2Fapi/v1/namespaces/default/configmaps",
			"/clusters//" + other + "/api/v1/namespaces/default/configmaps",
			"//clusters/" + other + "/api/v1/namespaces/default/configmaps",
			"/clusters/" + other + "//api/v1/namespaces/default/configmaps",
			"/clusters/" + own + "/clusters/" + other + "/api/v1/namespaces/default/configmaps",
			"/clusters/" + own + "/clusters/" + name + "/api/v1/namespaces/default/configmaps",
			"/clusters/" + own + "/api/v1/namespaces/default/configmaps/../../../../../clusters/" + other + "/api/v1/namespaces/default/configmaps",
			"/clusters/" + own + "/api/v1/namespaces/..%2F..%2F..%2Fclusters%2F" + name + "/configmaps",
			"/clusters/*/api/v1/configmaps",
			"/clusters/*/api/v1/namespaces/default/configmaps",
			"/clusters/root:*/api/v1/configmaps",
			"/clusters/" + other + ":*/api/v1/configmaps",
			"/clusters/" + other + ":/api/v1/namespaces/default/configmaps",
			"/clusters/:" + other + "/api/v1/namespaces/default/configmaps",
			"/clusters/root:/api/v1/namespaces/default/configmaps",
			"/clusters/" + strings.ToUpper(other) + "/api/v1/namespaces/default/configmaps",
			"/CLUSTERS/" + other + "/api/v1/namespaces/default/configmaps",
			"/Clusters/" + other + "/api/v1/namespaces/default/configmaps",
			"/clusters/" + strings.ToUpper(name) + "/api/v1/namespaces/default/configmaps",
			"/clusters/" + other + ":" + long200 + long200 + long200 + "/api/v1/namespaces/default/configmaps",
			"/clusters/" + strings.Repeat("x", 5000) + "/api/v1/namespaces/default/configmaps",
			"/clusters/" + strings.Replace(other, "sec", "s%C3%A9c", 1) + "/api/v1/namespaces/default/configmaps",
			"/clusters/" + strings.Replace(other, "sec", "%EF%BD%93ec", 1) + "/api/v1/namespaces/default/configmaps",
			"/clusters/" + other + "%00/api/v1/namespaces/default/configmaps",
			"/clusters/" + other + "%20/api/v1/namespaces/default/configmaps",
			"/clusters/%20" + other + "/api/v1/namespaces/default/configmaps",
			"/clusters/" + own + "/api/v1/namespaces/default/configmaps?x=/clusters/" + other,
			"/clusters/" + own + ";" + other + "/api/v1/namespaces/default/configmaps",
			"/clusters/" + other + "/../" + own + "/api/v1/namespaces/default/configmaps",
			"/clusters/" + other,
			"/clusters/" + other + "/",
			"/clusters/" + other + "/api",
			"/clusters/" + other + "/apis",
			"/clusters/" + other + "/openapi/v3",
			"/clusters/" + other + "/openapi/v2",
			"/clusters/" + other + "/version",
			"/clusters/" + other + "/metrics",
			"/clusters/" + other + "/debug/pprof/",
			"/clusters/" + other + "/healthz",
			"/services/cache/shards/*/clusters/" + name + "/api/v1/namespaces/default/configmaps",
			"/services/cache/shards/*/clusters/*/api/v1/configmaps",
		}
		bases := []string{sys.URL(t), sys.ShardURL(t, victim.shard)}
		if long {
			bases = append(bases, sys.ShardURL(t, attacker.shard))
		}
		for _, base := range bases {
			for _, trick := range tricks {
				path, query, _ := strings.Cut(trick, "?")
				for _, method := range []string{http.MethodGet, http.MethodDelete} {
					query := query
					if method == http.MethodDelete {
						// A trick that lands in the attacker's own workspace
						// deletes nothing; one that lands in the victim's
						// answers with the victim's objects.
						query = strings.TrimPrefix(query+"&dryRun=All", "&")
					}
					probes = append(probes, probe{
						what: attacker.user + " path trick", method: method, base: base, path: path, query: query,
						header: bearer(sys.UserToken(attacker.user)), victim: victim, expect: anyAnswer,
					})
				}
			}
		}
	}
	runAll(ctx, t, probes)
	// The victim's objects are all still there: no trick deleted them.
	victimsIntact(ctx, t, a, b)
}

// victimsIntact checks that every tenant's marked ConfigMap survived.
func victimsIntact(ctx context.Context, t *testing.T, tenants ...*tenant) {
	t.Helper()
	for _, tn := range tenants {
		c, err := kubernetes.NewForConfig(sys.AdminConfig(t, tn.path.String()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.CoreV1().ConfigMaps("default").Get(ctx, tn.configMap(), metav1.GetOptions{}); err != nil {
			t.Errorf("%s's marked ConfigMap: %v", tn.user, err)
		}
	}
}

// TestExistenceDoesNotLeak: an object of the victim and a name that does
// not exist are refused the same way, and so are the victim's workspace
// and a workspace that does not exist.
func TestExistenceDoesNotLeak(t *testing.T) {
	ctx := testContext(t)
	a, b := twoTenants(t)
	token := sys.UserToken(a.user)
	missing := strings.Replace(b.configMap(), "mk", "mx", 1)
	for _, in := range entrances(t, b) {
		get := func(cluster, name string) answer {
			return check(ctx, t, probe{what: "existence oracle", method: http.MethodGet, base: in.base,
				path:   "/clusters/" + cluster + "/api/v1/namespaces/default/configmaps/" + name,
				header: bearer(token), expect: refused})
		}
		existing, absent := get(in.cluster, b.configMap()), get(in.cluster, missing)
		if existing.code != absent.code || strings.ReplaceAll(existing.body, b.configMap(), missing) != absent.body {
			t.Errorf("%s/clusters/%s: an existing object and a missing one are refused differently:\n%d %s\n%d %s", in.base, in.cluster, existing.code, existing.body, absent.code, absent.body)
		}
		noWorkspace := in.cluster + "x"
		if !strings.Contains(in.cluster, ":") {
			noWorkspace = strings.Replace(in.cluster, in.cluster[:1], "z", 1)
		}
		other := get(noWorkspace, missing)
		if other.code != absent.code {
			t.Errorf("%s: the victim's workspace answers %d, a missing one %d", in.base, absent.code, other.code)
		}
	}
}

// TestListsOnlyShowTheOwnWorkspace: selectors, resourceVersion=0 (served
// from the watch cache), a watch from resourceVersion 0 and continue
// tokens taken from the victim's workspace or forged to point into it
// show the attacker nothing of the victim.
func TestListsOnlyShowTheOwnWorkspace(t *testing.T) {
	ctx := testContext(t)
	a, b := twoTenants(t)
	var probes []probe
	for _, d := range directions(a, b) {
		attacker, victim := d[0], d[1]
		token := sys.UserToken(attacker.user)
		// A continue token of the victim's list, taken by kcp-admin.
		admin, err := kubernetes.NewForConfig(sys.AdminConfig(t, victim.path.String()))
		if err != nil {
			t.Fatal(err)
		}
		page, err := admin.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil || page.Continue == "" {
			t.Fatalf("victim's first page: %v (continue %q)", err, page.Continue)
		}
		forged := func(start string) string {
			b, _ := json.Marshal(map[string]interface{}{"v": "meta.k8s.io/v1", "rv": mustAtoi(page.ResourceVersion), "start": start})
			return base64.RawURLEncoding.EncodeToString(b)
		}
		queries := []string{
			"labelSelector=app%3Dsec",
			"labelSelector=tenant-marker",
			"labelSelector=tenant-marker%21%3Dx",
			"labelSelector=app+in+%28sec%2Cother%29",
			"fieldSelector=metadata.namespace%3Ddefault",
			"fieldSelector=metadata.name%21%3Dx",
			"resourceVersion=0",
			"resourceVersion=0&labelSelector=app%3Dsec",
			"resourceVersion=" + page.ResourceVersion + "&resourceVersionMatch=NotOlderThan",
			"resourceVersion=" + page.ResourceVersion + "&resourceVersionMatch=Exact",
			"limit=1",
			"limit=1&continue=" + url.QueryEscape(page.Continue),
			"limit=500&continue=" + url.QueryEscape(page.Continue),
			"continue=" + url.QueryEscape(page.Continue),
			"limit=1&continue=" + forged("../"+victim.cluster.String()+"/default/"),
			"limit=1&continue=" + forged("/../../"+victim.cluster.String()+"/default/"),
			"limit=1&continue=" + forged("../../customresources/"+victim.cluster.String()+"/"),
			"limit=1&continue=" + forged("\x00"),
			"limit=1&continue=" + forged(""),
			"watch=1&timeoutSeconds=1&resourceVersion=0",
			"watch=1&timeoutSeconds=1&resourceVersion=0&labelSelector=app%3Dsec",
			"watch=1&timeoutSeconds=1&resourceVersion=1",
			"watch=1&timeoutSeconds=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
		}
		for _, q := range queries {
			for _, via := range []struct{ base, cluster string }{{sys.URL(t), attacker.path.String()}, {sys.ShardURL(t, attacker.shard), attacker.cluster.String()}} {
				for _, p := range []string{"/api/v1/namespaces/default/configmaps", "/api/v1/configmaps", "/api/v1/namespaces", "/api/v1/secrets"} {
					probes = append(probes, probe{
						what: attacker.user + " lists their own workspace", method: http.MethodGet, base: via.base,
						path: "/clusters/" + via.cluster + p, query: q, header: bearer(token), victim: victim, expect: anyAnswer,
					})
				}
			}
		}
		// Wildcard lists and watches, every way.
		for _, base := range []string{sys.URL(t), sys.ShardURL(t, "root"), sys.ShardURL(t, "shard-1")} {
			for _, q := range []string{"", "labelSelector=app%3Dsec", "watch=1&timeoutSeconds=1"} {
				for _, accept := range []string{"application/json", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"} {
					probes = append(probes, probe{
						what: attacker.user + " wildcard", method: http.MethodGet, base: base, path: "/clusters/*/api/v1/configmaps", query: q,
						header: bearer(token, "Accept", accept), victim: victim, expect: refused,
					})
				}
			}
		}
	}
	runAll(ctx, t, probes)
	// The own list does show the own markers: the checks are not vacuous.
	a1 := check(ctx, t, probe{what: "positive control", method: http.MethodGet, base: sys.URL(t), path: "/clusters/" + a.path.String() + "/api/v1/namespaces/default/configmaps",
		query: "resourceVersion=0", header: bearer(sys.UserToken(a.user)), victim: b, expect: served})
	if !strings.Contains(a1.body, a.marker+"-data") {
		t.Errorf("the attacker's own list lacks their own marker: %s", truncate(a1.body, 400))
	}
}

func mustAtoi(s string) int64 {
	var n int64
	_, _ = fmt.Sscan(s, &n)
	return n
}

// TestClientSetClusterAnnotationIsIgnored: an object sent with
// kcp.io/cluster naming the victim's logical cluster (create, update,
// patch, through the front-proxy and at the shard) stays in the
// attacker's workspace and says so; the victim's workspace never holds it.
func TestClientSetClusterAnnotationIsIgnored(t *testing.T) {
	ctx := testContext(t)
	a, b := twoTenants(t)
	token := sys.UserToken(a.user)
	for i, in := range []struct{ base, cluster string }{{sys.URL(t), a.path.String()}, {sys.ShardURL(t, a.shard), a.cluster.String()}} {
		name := fmt.Sprintf("annotated-%d", i)
		obj := func(extra string) []byte {
			return []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `","namespace":"default","annotations":{"kcp.io/cluster":"` + b.cluster.String() + `","kcp.io/path":"` + b.path.String() + `"}` + extra + `},"data":{"v":"x"}}`)
		}
		coll := "/clusters/" + in.cluster + "/api/v1/namespaces/default/configmaps"
		for _, p := range []probe{
			{what: "create with kcp.io/cluster of the victim", method: http.MethodPost, path: coll, body: obj("")},
			{what: "update with kcp.io/cluster of the victim", method: http.MethodPut, path: coll + "/" + name, body: obj("")},
			{what: "patch with kcp.io/cluster of the victim", method: http.MethodPatch, path: coll + "/" + name,
				body:   []byte(`{"metadata":{"annotations":{"kcp.io/cluster":"` + b.cluster.String() + `"}}}`),
				header: http.Header{"Content-Type": {"application/merge-patch+json"}}},
			{what: "apply with kcp.io/cluster of the victim", method: http.MethodPatch, path: coll + "/" + name, query: "fieldManager=sec&force=true",
				body: obj(""), header: http.Header{"Content-Type": {"application/apply-patch+yaml"}}},
		} {
			p.base, p.victim, p.expect = in.base, b, served
			p.header = mergeHeaders(bearer(token), p.header)
			ans := check(ctx, t, p)
			var got metav1.PartialObjectMetadata
			if err := json.Unmarshal([]byte(ans.body), &got); err != nil {
				t.Fatalf("%s: %v: %s", p.what, err, ans.body)
			}
			if c := got.Annotations["kcp.io/cluster"]; c != a.cluster.String() {
				t.Errorf("%s at %s: the object says kcp.io/cluster %q, want the attacker's %q", p.what, in.base, c, a.cluster)
			}
		}
		admin, err := kubernetes.NewForConfig(sys.AdminConfig(t, b.path.String()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := admin.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{}); err == nil {
			t.Errorf("the victim's workspace holds %s, created by the attacker with its kcp.io/cluster", name)
		}
	}
}
