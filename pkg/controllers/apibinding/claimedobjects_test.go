package apibinding

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/permissionclaim"
)

// claimingBinding is a bound binding of consumer that accepts the
// configmaps claim of provider's "cowboys" export for all objects.
func claimingBinding() *apisv1alpha2.APIBinding {
	b := newBinding("cowboys", "root:provider", "cowboys")
	b.Spec.PermissionClaims = []apisv1alpha2.AcceptablePermissionClaim{acceptClaim(configMapsClaim, apisv1alpha2.ClaimAccepted)}
	b.Status.APIExportClusterName = string(provider)
	b.Status.ExportPermissionClaims = []apisv1alpha2.PermissionClaim{configMapsClaim}
	return b
}

func object(cluster logicalcluster.Name, namespace, name string, labels map[string]string) *metav1.ObjectMeta {
	m := &metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels}
	if cluster != "" {
		m.Annotations = map[string]string{logicalcluster.AnnotationKey: string(cluster)}
	}
	return m
}

// The objects a watch shows with claim labels other than their
// workspace's bindings give them are written again, in their own cluster,
// and no others: an object admitted before its workspace accepted a claim,
// one admitted before a claim was revoked; not one labelled as it should,
// nor one of a workspace that accepts nothing.
func TestClaimedObjectsRelabelsOnlyObjectsWithStaleClaimLabels(t *testing.T) {
	other := logicalcluster.Name("other")
	bindings := map[logicalcluster.Name][]*apisv1alpha2.APIBinding{consumer: {claimingBinding()}}
	key, val := permissionclaim.LabelKeyAndValue(provider, "cowboys", configMapsClaim)
	type written struct {
		cluster         logicalcluster.Name
		gr              schema.GroupResource
		namespace, name string
	}
	var mu sync.Mutex
	var got []written
	done := make(chan struct{})
	c := NewClaimedObjects(ClaimedObjectsConfig{
		Bindings: func(cluster logicalcluster.Name) []*apisv1alpha2.APIBinding { return bindings[cluster] },
		Relabel: func(_ context.Context, cluster logicalcluster.Name, gr schema.GroupResource, namespace, name string) error {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, written{cluster, gr, namespace, name})
			if name == "sentinel" {
				close(done)
			}
			return nil
		},
	})
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	sheriffs := schema.GroupVersionResource{Group: "wild.wild.west", Version: "v1", Resource: "sheriffs"}
	c.Observe(configMaps, object(consumer, "default", "unlabelled", map[string]string{"app": "x"}))
	c.Observe(configMaps, object(consumer, "default", "labelled", map[string]string{"app": "x", key: val}))
	c.Observe(configMaps, object(other, "default", "revoked", map[string]string{key: val}))
	c.Observe(configMaps, object(other, "default", "never-claimed", map[string]string{"app": "x"}))
	c.Observe(sheriffs, object(consumer, "", "not-claimed", nil))
	c.Observe(configMaps, object("", "default", "no-cluster", map[string]string{key: val}))
	// One worker takes keys in order: the sentinel comes after the rest.
	c.Observe(configMaps, object(consumer, "kube-system", "sentinel", nil))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Run(ctx, 1)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the sentinel was never written")
	}
	mu.Lock()
	defer mu.Unlock()
	cms := schema.GroupResource{Resource: "configmaps"}
	want := []written{{consumer, cms, "default", "unlabelled"}, {other, cms, "default", "revoked"}, {consumer, cms, "kube-system", "sentinel"}}
	if !slices.Equal(got, want) {
		t.Fatalf("written %+v, want %+v", got, want)
	}
}

func TestObjectKeyRoundTrips(t *testing.T) {
	for _, tc := range []struct {
		gr              schema.GroupResource
		namespace, name string
	}{
		{schema.GroupResource{Resource: "configmaps"}, "default", "a"},
		{schema.GroupResource{Group: "wild.wild.west", Resource: "sheriffs"}, "", "b"},
		{schema.GroupResource{Group: "apis.kcp.io", Resource: "apibindings"}, "", "tenancy.kcp.io"},
	} {
		gr, cluster, namespace, name, ok := splitObjectKey(objectKey(tc.gr, consumer, tc.namespace, tc.name))
		if !ok || gr != tc.gr || cluster != consumer || namespace != tc.namespace || name != tc.name {
			t.Errorf("%v %s/%s came back as %v %s %s/%s (%v)", tc.gr, tc.namespace, tc.name, gr, cluster, namespace, name, ok)
		}
	}
	if _, _, _, _, ok := splitObjectKey("no separator"); ok {
		t.Error("a key without a resource parsed")
	}
}

// RelabelObject writes the object unchanged (an empty merge patch, as
// kcp's controller sends) through the cluster's preferred version of the
// group; an object that is gone, or a group the cluster does not serve,
// needs nothing.
func TestRelabelObjectSendsAnEmptyPatchInTheObjectsCluster(t *testing.T) {
	type request struct{ method, path, contentType, body string }
	var mu sync.Mutex
	var requests []request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		requests = append(requests, request{r.Method, r.URL.Path, r.Header.Get("Content-Type"), string(body)})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/clusters/consumer/apis/wild.wild.west":
			_, _ = io.WriteString(w, `{"kind":"APIGroup","apiVersion":"v1","name":"wild.wild.west","versions":[{"groupVersion":"wild.wild.west/v2","version":"v2"}],"preferredVersion":{"groupVersion":"wild.wild.west/v2","version":"v2"}}`)
		case r.Method == http.MethodPatch && r.URL.Path == "/clusters/consumer/apis/wild.wild.west/v2/sheriffs/gone":
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
		case r.Method == http.MethodPatch:
			_, _ = io.WriteString(w, `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"x"}}`)
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
		}
	}))
	defer srv.Close()
	r, err := NewRelabeler(&rest.Config{Host: srv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sheriffs := schema.GroupResource{Group: "wild.wild.west", Resource: "sheriffs"}
	for _, step := range []struct {
		cluster         logicalcluster.Name
		gr              schema.GroupResource
		namespace, name string
	}{
		{consumer, schema.GroupResource{Resource: "configmaps"}, "default", "stale"},
		{consumer, sheriffs, "", "stale"},
		{consumer, sheriffs, "", "gone"},
		{"unserved", sheriffs, "", "stale"},
	} {
		if err := r.RelabelObject(ctx, step.cluster, step.gr, step.namespace, step.name); err != nil {
			t.Fatalf("RelabelObject(%s, %v, %s/%s): %v", step.cluster, step.gr, step.namespace, step.name, err)
		}
	}
	const mergePatch = "application/merge-patch+json"
	want := []request{
		{http.MethodPatch, "/clusters/consumer/api/v1/namespaces/default/configmaps/stale", mergePatch, "{}"},
		{http.MethodGet, "/clusters/consumer/apis/wild.wild.west", "", ""},
		{http.MethodPatch, "/clusters/consumer/apis/wild.wild.west/v2/sheriffs/stale", mergePatch, "{}"},
		{http.MethodGet, "/clusters/consumer/apis/wild.wild.west", "", ""},
		{http.MethodPatch, "/clusters/consumer/apis/wild.wild.west/v2/sheriffs/gone", mergePatch, "{}"},
		{http.MethodGet, "/clusters/unserved/apis/wild.wild.west", "", ""},
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(requests, want) {
		t.Fatalf("requests\n%+v\nwant\n%+v", requests, want)
	}
}
