package e2ecache

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/cacheserver"
	"github.com/shardplane/shardplane/pkg/identities"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

var apiExports = schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha2", Resource: "apiexports"}

// apiExport is a replica as a shard would write it: the original's
// metadata (uid, creation time, generation) and content.
func apiExport(name string, uid types.UID) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apis.kcp.io/v1alpha2",
		"kind":       "APIExport",
		"metadata": map[string]any{
			"name":              name,
			"uid":               string(uid),
			"generation":        int64(4),
			"creationTimestamp": "2024-05-06T07:08:09Z",
		},
		"spec": map[string]any{
			"resources": []any{map[string]any{"name": "widgets", "group": "example.io", "schema": "v1.widgets.example.io", "storage": map[string]any{"crd": map[string]any{}}}},
		},
		"status": map[string]any{"identityHash": "0123abcd"},
	}}
	return u
}

// origin returns the shard and cluster a replica reads back with.
func origin(u unstructured.Unstructured) string {
	a := u.GetAnnotations()
	return a[cacheclient.ShardAnnotationKey] + "/" + a[logicalcluster.AnnotationKey]
}

// named returns the items with one of the names, as shard/cluster/name.
func named(items []unstructured.Unstructured, names ...string) []string {
	var out []string
	for _, u := range items {
		if slices.Contains(names, u.GetName()) {
			out = append(out, origin(u)+"/"+u.GetName())
		}
	}
	slices.Sort(out)
	return out
}

func TestCacheServerStoresReplicasPerShardAndCluster(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s1, s2 := cacheclient.Shard(uniqueName("s1-")), cacheclient.Shard(uniqueName("s2-"))
	c1, c2 := logicalcluster.Name(uniqueName("c1-")), logicalcluster.Name(uniqueName("c2-"))
	name := uniqueName("export-")

	// The same name in two shards and clusters: two replicas.
	for _, at := range []struct {
		shard   cacheclient.Shard
		cluster logicalcluster.Name
		uid     types.UID
	}{{s1, c1, "00000000-0000-0000-0000-0000000000c1"}, {s2, c2, "00000000-0000-0000-0000-0000000000c2"}} {
		got, err := dynamicClient(t, writer, at.shard, at.cluster).Resource(apiExports).Create(ctx, apiExport(name, at.uid), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("writer creates the replica in %s/%s: %v", at.shard, at.cluster, err)
		}
		if got.GetUID() != at.uid || got.GetGeneration() != 4 || got.GetCreationTimestamp().UTC().Format(time.RFC3339) != "2024-05-06T07:08:09Z" {
			t.Errorf("replica in %s/%s has uid %q, generation %d, created %v: want its original's", at.shard, at.cluster, got.GetUID(), got.GetGeneration(), got.GetCreationTimestamp())
		}
		if o := origin(*got); o != string(at.shard)+"/"+string(at.cluster) {
			t.Errorf("replica in %s/%s reads back with origin %s", at.shard, at.cluster, o)
		}
		if id, _, _ := unstructured.NestedString(got.Object, "status", "identityHash"); id != "0123abcd" {
			t.Errorf("replica in %s/%s lost its status: %v", at.shard, at.cluster, got.Object["status"])
		}
	}

	for _, tc := range []struct {
		shard   cacheclient.Shard
		cluster logicalcluster.Name
		want    []string
	}{
		{cacheclient.WildcardShard, logicalcluster.Wildcard, []string{fmt.Sprintf("%s/%s/%s", s1, c1, name), fmt.Sprintf("%s/%s/%s", s2, c2, name)}},
		{s1, logicalcluster.Wildcard, []string{fmt.Sprintf("%s/%s/%s", s1, c1, name)}},
		{cacheclient.WildcardShard, c2, []string{fmt.Sprintf("%s/%s/%s", s2, c2, name)}},
		{s1, c1, []string{fmt.Sprintf("%s/%s/%s", s1, c1, name)}},
		{s1, c2, nil},
	} {
		list, err := dynamicClient(t, reader, tc.shard, tc.cluster).Resource(apiExports).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("reader lists %s/%s: %v", tc.shard, tc.cluster, err)
		}
		if got := named(list.Items, name); !slices.Equal(got, tc.want) {
			t.Errorf("list of %s/%s: %v, want %v", tc.shard, tc.cluster, got, tc.want)
		}
	}

	// Keys: /cache/<group>/<resource>/<shard>/<cluster>/<name>.
	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{fmt.Sprintf("http://127.0.0.1:%d", cache.etcdPort)}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	for _, key := range []string{
		fmt.Sprintf("/cache/apis.kcp.io/apiexports/%s/%s/%s", s1, c1, name),
		fmt.Sprintf("/cache/apis.kcp.io/apiexports/%s/%s/%s", s2, c2, name),
	} {
		resp, err := etcd.Get(ctx, key, clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Count != 1 {
			t.Errorf("etcd has no key %s", key)
		}
	}

	// Clients find the kinds by discovery below the shard and cluster.
	disco, err := discovery.NewDiscoveryClientForConfig(config(t, reader, s1, c1))
	if err != nil {
		t.Fatal(err)
	}
	resources, err := disco.ServerResourcesForGroupVersion("apis.kcp.io/v1alpha2")
	if err != nil {
		t.Fatalf("discovery of apis.kcp.io/v1alpha2: %v", err)
	}
	if !slices.ContainsFunc(resources.APIResources, func(r metav1.APIResource) bool {
		return r.Name == "apiexports" && r.Kind == "APIExport" && !r.Namespaced
	}) {
		t.Errorf("discovery of apis.kcp.io/v1alpha2 lacks apiexports: %+v", resources.APIResources)
	}
	groups, err := disco.ServerGroups()
	if err != nil {
		t.Fatalf("discovery of groups: %v", err)
	}
	var preferred []string
	for _, g := range groups.Groups {
		preferred = append(preferred, g.PreferredVersion.GroupVersion)
	}
	for _, gv := range []string{"apis.kcp.io/v1alpha2", "tenancy.kcp.io/v1alpha1", "core.kcp.io/v1alpha1", "rbac.authorization.k8s.io/v1"} {
		if !slices.Contains(preferred, gv) {
			t.Errorf("discovery prefers %v, want %s among them", preferred, gv)
		}
	}
}

func TestCacheServerWatchSeesUpdatesAndDeletes(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	shard := cacheclient.Shard(uniqueName("s-"))
	cluster, other := logicalcluster.Name(uniqueName("c-")), logicalcluster.Name(uniqueName("o-"))
	name := uniqueName("export-")
	writes := dynamicClient(t, writer, shard, cluster).Resource(apiExports)

	watchAll := dynamicClient(t, reader, cacheclient.WildcardShard, cluster).Resource(apiExports)
	list, err := watchAll.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := watchAll.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	// A replica with its original's finalizers: they must not hold its
	// deletion, nothing on the cache server removes them.
	obj := apiExport(name, "")
	obj.SetFinalizers([]string{"apis.kcp.io/apibinding-finalizer"})
	if _, err := writes.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A replica of another cluster of the same shard, written before the
	// update: the watch of the cluster must never deliver it.
	if _, err := dynamicClient(t, writer, shard, other).Resource(apiExports).Create(ctx, apiExport(name, ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	current, err := writes.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(current.Object, "changed", "spec", "note"); err != nil {
		t.Fatal(err)
	}
	if _, err := writes.Update(ctx, current, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := writes.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	var seen []string
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for done := false; !done; {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch ended after %v", seen)
			}
			u, isObject := e.Object.(*unstructured.Unstructured)
			if !isObject {
				t.Fatalf("watch event %s carries %T: %v", e.Type, e.Object, e.Object)
			}
			if u.GetName() != name {
				continue
			}
			if o := origin(*u); o != string(shard)+"/"+string(cluster) {
				t.Errorf("watch of cluster %s delivered %s %s from %s", cluster, e.Type, name, o)
			}
			note, _, _ := unstructured.NestedString(u.Object, "spec", "note")
			seen = append(seen, fmt.Sprintf("%s:%s", e.Type, note))
			done = e.Type == watch.Deleted
		case <-waitCtx.Done():
			t.Fatalf("no DELETED event; saw %v", seen)
		}
	}
	if want := []string{"ADDED:", "MODIFIED:changed", "DELETED:changed"}; !slices.Equal(seen, want) {
		t.Errorf("events %v, want %v", seen, want)
	}
	if _, err := writes.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v, want NotFound", err)
	}
}

func TestCacheServerRefusesWritesFromNonWriters(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	shard, cluster := cacheclient.Shard(uniqueName("s-")), logicalcluster.Name(uniqueName("c-"))
	for _, user := range []string{reader, stranger} {
		_, err := dynamicClient(t, user, shard, cluster).Resource(apiExports).Create(ctx, apiExport(uniqueName("export-"), ""), metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("%s creates: %v, want 403", user, err)
		}
		if !strings.Contains(err.Error(), identities.CacheWriterGroup) {
			t.Errorf("%s is refused with %q, which does not name the writer group %s", user, err, identities.CacheWriterGroup)
		}
	}
	if _, err := dynamicClient(t, reader, shard, cluster).Resource(apiExports).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("reader lists: %v", err)
	}
	_, err := dynamicClient(t, stranger, shard, cluster).Resource(apiExports).List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), identities.CacheReaderGroup) {
		t.Errorf("stranger lists: %v, want 403 naming the reader group %s", err, identities.CacheReaderGroup)
	}
}

func TestCacheServerPathsNameShardAndCluster(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	shard, cluster := cacheclient.Shard(uniqueName("s-")), logicalcluster.Name(uniqueName("c-"))
	// raw GETs a path as a user ("" for no credentials).
	raw := func(user, path string) (int, string) {
		client, err := rest.HTTPClientFor(config(t, user, shard, cluster))
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return resp.StatusCode, resp.Status + ": " + string(body)
	}
	for _, tc := range []struct {
		user, path string
		code       int
	}{
		{writer, "/apis/apis.kcp.io/v1alpha2/apiexports", http.StatusBadRequest},
		{writer, "/services/cache/apis/apis.kcp.io/v1alpha2/apiexports", http.StatusBadRequest},
		{writer, fmt.Sprintf("/services/cache/shards/%s/apis/apis.kcp.io/v1alpha2/apiexports", shard), http.StatusBadRequest},
		{writer, fmt.Sprintf("/services/cache/shards/%s/clusters/root:org/apis/apis.kcp.io/v1alpha2/apiexports", shard), http.StatusBadRequest},
		{writer, fmt.Sprintf("/services/cache/shards/%s/clusters/%s/apis/apis.kcp.io/v1alpha2/apiexports", shard, cluster), http.StatusOK},
		{stranger, "/readyz", http.StatusOK},
		{"", "/livez", http.StatusOK},
		{"", "/healthz", http.StatusOK},
		{reader, "/metrics", http.StatusOK},
		{stranger, "/metrics", http.StatusForbidden},
		{writer, fmt.Sprintf("/services/cache/shards/%s/clusters/%s/metrics", shard, cluster), http.StatusNotImplemented},
	} {
		if code, status := raw(tc.user, tc.path); code != tc.code {
			t.Errorf("%s GET %s: %s, want %d", tc.user, tc.path, status, tc.code)
		}
	}

	// Across a wildcard, only list and watch.
	for _, at := range []struct {
		shard   cacheclient.Shard
		cluster logicalcluster.Name
	}{{cacheclient.WildcardShard, cluster}, {shard, logicalcluster.Wildcard}} {
		exports := dynamicClient(t, writer, at.shard, at.cluster).Resource(apiExports)
		if _, err := exports.Create(ctx, apiExport(uniqueName("export-"), ""), metav1.CreateOptions{}); !apierrors.IsMethodNotSupported(err) {
			t.Errorf("create in %s/%s: %v, want 405", at.shard, at.cluster, err)
		}
		if _, err := exports.Get(ctx, "x", metav1.GetOptions{}); !apierrors.IsMethodNotSupported(err) {
			t.Errorf("get in %s/%s: %v, want 405", at.shard, at.cluster, err)
		}
	}
}

// TestCacheServerKeepsReplicasAcrossRestart restarts the shared cache
// server, so it does not run in parallel with the others.
func TestCacheServerKeepsReplicasAcrossRestart(t *testing.T) {
	ctx := testContext(t)
	shard, cluster := cacheclient.Shard(uniqueName("s-")), logicalcluster.Name(uniqueName("c-"))
	name := uniqueName("export-")
	const uid = "00000000-0000-0000-0000-00000000aaaa"
	if _, err := dynamicClient(t, writer, shard, cluster).Resource(apiExports).Create(ctx, apiExport(name, uid), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cache.proc.Stop(); err != nil {
		t.Fatalf("stop the cache server: %v", err)
	}
	if err := cache.proc.Start(); err != nil {
		t.Fatalf("restart the cache server: %v\n%s", err, cache.proc.LogTail(40))
	}
	got, err := dynamicClient(t, reader, shard, cluster).Resource(apiExports).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get the replica after a restart: %v", err)
	}
	if got.GetUID() != uid || origin(*got) != string(shard)+"/"+string(cluster) {
		t.Errorf("after a restart the replica has uid %q and origin %s", got.GetUID(), origin(*got))
	}
}

// TestCacheServerListsReplicasOfOneNameFromEveryClusterAfterARestart:
// replicas of different shards and clusters share names; the cache
// server's watch caches, filled afresh at start, keep each of them.
func TestCacheServerListsReplicasOfOneNameFromEveryClusterAfterARestart(t *testing.T) {
	ctx := testContext(t)
	name := uniqueName("same-")
	var origins []string
	for i := range 3 {
		shard, cluster := cacheclient.Shard(uniqueName("s-")), logicalcluster.Name(uniqueName("c-"))
		uid := types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i+1))
		if _, err := dynamicClient(t, writer, shard, cluster).Resource(apiExports).Create(ctx, apiExport(name, uid), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		origins = append(origins, string(shard)+"/"+string(cluster))
	}
	if err := cache.proc.Stop(); err != nil {
		t.Fatalf("stop the cache server: %v", err)
	}
	if err := cache.proc.Start(); err != nil {
		t.Fatalf("restart the cache server: %v\n%s", err, cache.proc.LogTail(40))
	}
	list, err := dynamicClient(t, reader, cacheclient.WildcardShard, logicalcluster.Wildcard).Resource(apiExports).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, item := range list.Items {
		if item.GetName() == name {
			found[origin(item)] = true
		}
	}
	for _, o := range origins {
		if !found[o] {
			t.Errorf("after a restart the wildcard list lacks %s of %s: has %v", name, o, found)
		}
	}
}

// TestCacheServerKubeconfigsOfTheRootDirectoryWrite uses the kubeconfigs
// the cache server writes: the admin's (a token of system:masters) and the
// writer's (a client certificate in the writer group), which is what a
// shard is given.
func TestCacheServerKubeconfigsOfTheRootDirectoryWrite(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	shard, cluster := cacheclient.Shard(uniqueName("s-")), logicalcluster.Name(uniqueName("c-"))
	for _, file := range []string{"admin.kubeconfig", cacheserver.WriterKubeconfigFile} {
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(cache.rootDir, file))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Host = cacheclient.URL(cfg.Host, shard, cluster)
		client, err := dynamic.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		name := uniqueName("export-")
		if _, err := client.Resource(apiExports).Create(ctx, apiExport(name, ""), metav1.CreateOptions{}); err != nil {
			t.Errorf("%s creates a replica: %v", file, err)
		}
		if err := client.Resource(apiExports).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("%s deletes a replica: %v", file, err)
		}
	}
}
