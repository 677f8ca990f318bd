package cacheserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/identities"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/storage/embeddedetcd/etcdtest"
)

// testUsers are the users of usersByHeader, with their groups.
var testUsers = map[string][]string{
	"writer":   {identities.CacheWriterGroup},
	"reader":   {identities.CacheReaderGroup},
	"stranger": nil,
}

// usersByHeader authenticates the user a test header names.
func usersByHeader() authenticator.Request {
	return authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
		name := req.Header.Get("X-Test-User")
		groups, ok := testUsers[name]
		if !ok {
			return nil, false, nil
		}
		return &authenticator.Response{User: &user.DefaultInfo{Name: name, Groups: append([]string{user.AllAuthenticated}, groups...)}}, true, nil
	})
}

// TestEmbeddedHandlerServesTheCacheBelowItsPrefix builds the cache server as
// a shard would mount it in-process, on an etcd of its own, and checks what
// its handler answers: paths, access, wildcards, discovery and a replica
// written and listed.
func TestEmbeddedHandlerServesTheCacheBelowItsPrefix(t *testing.T) {
	server := etcdtest.Start(t)
	etcd := genericoptions.NewEtcdOptions(storagebackend.NewDefaultConfig(DefaultEtcdPrefix, nil))
	etcd.StorageConfig.Transport.ServerList = []string{server.ClientURL}
	c, err := NewEmbeddedConfig(Embedding{
		Authenticator:   usersByHeader(),
		Loopback:        &rest.Config{Host: "https://127.0.0.1:1"},
		ExternalAddress: "127.0.0.1:1",
		Etcd:            etcd,
		Access:          Access{WriterGroups: []string{identities.CacheWriterGroup}, ReaderGroups: []string{identities.CacheReaderGroup}},
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Complete().New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.GenericAPIServer.Destroy()
	h := s.Handler()

	const exports = "/apis/apis.kcp.io/v1alpha2/apiexports"
	serve := func(user, method, path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if user != "" {
			req.Header.Set("X-Test-User", user)
		}
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	replica := `{"apiVersion":"apis.kcp.io/v1alpha2","kind":"APIExport","metadata":{"name":"e"}}`
	for _, tc := range []struct {
		name, user, method, path, body string
		code                           int
		says                           string
	}{
		{"no shard", "writer", http.MethodGet, "/services/cache" + exports, "", http.StatusBadRequest, "addresses no shard"},
		{"no cluster", "writer", http.MethodGet, "/services/cache/shards/s1" + exports, "", http.StatusBadRequest, "addresses no logical cluster"},
		{"a workspace path", "writer", http.MethodGet, "/services/cache/shards/s1/clusters/root:org" + exports, "", http.StatusBadRequest, "by name"},
		{"stranger writes", "stranger", http.MethodPost, cacheclient.Path("s1", "c1") + exports, replica, http.StatusForbidden, identities.CacheWriterGroup},
		{"reader writes", "reader", http.MethodPost, cacheclient.Path("s1", "c1") + exports, replica, http.StatusForbidden, identities.CacheWriterGroup},
		{"stranger reads", "stranger", http.MethodGet, cacheclient.Path("s1", "c1") + exports, "", http.StatusForbidden, identities.CacheReaderGroup},
		{"anonymous reads", "", http.MethodGet, cacheclient.Path("*", "*") + exports, "", http.StatusUnauthorized, ""},
		{"writer creates across shards", "writer", http.MethodPost, cacheclient.Path("*", "c1") + exports, replica, http.StatusMethodNotAllowed, "only list and watch"},
		{"writer deletes across clusters", "writer", http.MethodDelete, cacheclient.Path("s1", "*") + exports + "/e", "", http.StatusMethodNotAllowed, "only list and watch"},
		{"a namespace of a cluster-scoped kind", "reader", http.MethodGet, cacheclient.Path("s1", "c1") + "/apis/apis.kcp.io/v1alpha2/namespaces/ns/apiexports", "", http.StatusNotFound, ""},
		{"a kind not replicated", "reader", http.MethodGet, cacheclient.Path("s1", "c1") + "/apis/apis.kcp.io/v1alpha2/apibindings", "", http.StatusNotFound, ""},
		{"a version not served", "reader", http.MethodGet, cacheclient.Path("s1", "c1") + "/apis/apis.kcp.io/v1alpha1/apiexports", "", http.StatusNotFound, ""},
		{"metrics at cluster scope", "writer", http.MethodGet, cacheclient.Path("s1", "c1") + "/metrics", "", http.StatusNotImplemented, "process-wide"},
	} {
		rec := serve(tc.user, tc.method, tc.path, tc.body)
		if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.says) {
			t.Errorf("%s: %d %s, want %d saying %q", tc.name, rec.Code, rec.Body, tc.code, tc.says)
		}
	}

	if rec := serve("writer", http.MethodPost, cacheclient.Path("s1", "c1")+exports, replica); rec.Code != http.StatusCreated {
		t.Fatalf("writer creates: %d %s", rec.Code, rec.Body)
	}
	rec := serve("reader", http.MethodGet, cacheclient.Path("*", "c1")+exports, "")
	var list struct {
		Items []metav1.PartialObjectMetadata `json:"items"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &list); rec.Code != http.StatusOK || err != nil || len(list.Items) != 1 ||
		list.Items[0].Annotations[cacheclient.ShardAnnotationKey] != "s1" || list.Items[0].Annotations[logicalcluster.AnnotationKey] != "c1" {
		t.Errorf("reader lists: %d %s (%v)", rec.Code, rec.Body, err)
	}

	rec = serve("reader", http.MethodGet, cacheclient.Path("s1", "c1")+"/apis/apis.kcp.io", "")
	var group metav1.APIGroup
	if err := json.Unmarshal(rec.Body.Bytes(), &group); rec.Code != http.StatusOK || err != nil {
		t.Fatalf("group discovery: %d %s (%v)", rec.Code, rec.Body, err)
	}
	if group.PreferredVersion.Version != "v1alpha2" || len(group.Versions) != 2 || group.Versions[0].Version != "v1alpha2" {
		t.Errorf("apis.kcp.io discovery: %+v, want v1alpha2 (preferred) and v1alpha1", group)
	}
	rec = serve("reader", http.MethodGet, cacheclient.Path("*", "*")+"/apis/rbac.authorization.k8s.io/v1", "")
	var resources metav1.APIResourceList
	if err := json.Unmarshal(rec.Body.Bytes(), &resources); rec.Code != http.StatusOK || err != nil {
		t.Fatalf("version discovery: %d %s (%v)", rec.Code, rec.Body, err)
	}
	namespaced := map[string]bool{}
	for _, r := range resources.APIResources {
		namespaced[r.Name] = r.Namespaced
	}
	if len(namespaced) != 4 || !namespaced["roles"] || !namespaced["rolebindings"] || namespaced["clusterroles"] || namespaced["clusterrolebindings"] {
		t.Errorf("rbac discovery: %v", namespaced)
	}
}
