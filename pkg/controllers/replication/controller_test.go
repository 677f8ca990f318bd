package replication

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

func kindOf(resource string) cacheclient.Kind {
	for _, k := range cacheclient.Kinds {
		if k.Resource.Resource == resource {
			return k
		}
	}
	panic("no cached kind " + resource)
}

var (
	exportKind = kindOf("apiexports")
	roleKind   = kindOf("clusterroles")
)

// testShard is a fake shard with APIExports and ClusterRoles.
type testShard struct {
	name    string
	exports *fakeResource
	roles   *fakeResource
	// workers replicate; 2 unless set.
	workers int
}

func newTestShard(name string) *testShard {
	return &testShard{
		name:    name,
		exports: newFakeResource(func() runtime.Object { return &apisv1alpha2.APIExportList{} }),
		roles:   newFakeResource(func() runtime.Object { return &rbacv1.ClusterRoleList{} }),
	}
}

// start runs new informers over the shard and a replication controller
// of its APIExports and marked ClusterRoles until the returned stop is
// called (or the test ends).
func (s *testShard) start(t testing.TB, cache *testCache) (*Controller, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	exports := s.exports.informer(&apisv1alpha2.APIExport{}, "wildcard-apiexports")
	roles := s.roles.informer(&rbacv1.ClusterRole{}, "wildcard-clusterroles")
	c, err := New(Config{ShardName: s.name, Cache: cache.writer, Sources: []Source{
		{Kind: exportKind, Informer: exports},
		{Kind: roleKind, Informer: roles, Filter: MarkedForReplication},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, run := range []func(){
		func() { exports.Run(ctx) },
		func() { roles.Run(ctx) },
		func() { c.Run(ctx, max(s.workers, 2)) },
	} {
		wg.Add(1)
		go func() { defer wg.Done(); run() }()
	}
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return c, stop
}

func newExport(name string, uid types.UID, group string) *apisv1alpha2.APIExport {
	return &apisv1alpha2.APIExport{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid, Generation: 1, Labels: map[string]string{"team": "a"}},
		Spec:       apisv1alpha2.APIExportSpec{Resources: []apisv1alpha2.ResourceSchema{{Name: "widgets", Group: group, Schema: "v1.widgets." + group}}},
	}
}

func newRole(name string, uid types.UID, replicate string) *rbacv1.ClusterRole {
	r := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"apis.kcp.io"}, Resources: []string{"apiexports"}, Verbs: []string{"bind"}, ResourceNames: []string{name}}},
	}
	if replicate != "" {
		r.Annotations = map[string]string{ReplicateAnnotationKey: replicate}
	}
	return r
}

// replicaIs returns a check that the replica of a kind's object holds
// what check wants; nil wants no replica.
func replicaIs(t *testing.T, cache *testCache, shard string, kind cacheclient.Kind, cluster logicalcluster.Name, name string, check func(*unstructured.Unstructured) error) func() error {
	return func() error {
		u, err := cache.replica(t, shard, kind, cluster, name)
		switch {
		case err != nil:
			return err
		case check == nil && u != nil:
			return fmt.Errorf("replica %s|%s exists, want none", cluster, name)
		case check == nil:
			return nil
		case u == nil:
			return fmt.Errorf("no replica of %s|%s", cluster, name)
		}
		return check(u)
	}
}

// copyOf checks that a replica holds the local object's uid, labels and
// content (spec or rules), and names its origin.
func copyOf(s *testShard, cluster logicalcluster.Name, local metav1.Object, field string, content interface{}) func(*unstructured.Unstructured) error {
	return func(u *unstructured.Unstructured) error {
		a := u.GetAnnotations()
		if a[cacheclient.ShardAnnotationKey] != s.name || a[logicalcluster.AnnotationKey] != string(cluster) {
			return fmt.Errorf("replica names origin %q %q, want %q %q", a[cacheclient.ShardAnnotationKey], a[logicalcluster.AnnotationKey], s.name, cluster)
		}
		if u.GetUID() != local.GetUID() {
			return fmt.Errorf("replica uid %q, want %q", u.GetUID(), local.GetUID())
		}
		if !equalStrings(u.GetLabels(), local.GetLabels(), nil) {
			return fmt.Errorf("replica labels %v, want %v", u.GetLabels(), local.GetLabels())
		}
		raw, err := json.Marshal(content)
		if err != nil {
			return err
		}
		var want interface{}
		if err := json.Unmarshal(raw, &want); err != nil {
			return err
		}
		if got := u.Object[field]; !equalJSON(want, got) {
			return fmt.Errorf("replica %s %v, want %v", field, got, want)
		}
		return nil
	}
}

func TestCreateUpdateDeleteReachTheCache(t *testing.T) {
	cache := startCache(t)
	s := newTestShard("shard-1")
	s.start(t, cache)
	const cluster = logicalcluster.Name("c1")

	e := newExport("widgets", "uid-1", "example.io")
	stored := s.exports.set(cluster, e)
	eventually(t, "replica created", replicaIs(t, cache, s.name, exportKind, cluster, "widgets", copyOf(s, cluster, e, "spec", e.Spec)))
	// What the cache server returns compares equal to the object, or every
	// reconcile would write the replica again.
	replica, err := cache.replica(t, s.name, exportKind, cluster, "widgets")
	if err != nil {
		t.Fatal(err)
	}
	want, err := newReplica(stored, exportKind, s.name, cluster)
	if err != nil {
		t.Fatal(err)
	}
	if !replicaUpToDate(want, replica) {
		t.Errorf("replica read back from the cache differs from the object:\n%v\n%v", want.Object, replica.Object)
	}

	e.Spec.Resources[0].Schema = "v2.widgets.example.io"
	e.Generation = 2
	s.exports.set(cluster, e)
	eventually(t, "spec update replicated", replicaIs(t, cache, s.name, exportKind, cluster, "widgets", copyOf(s, cluster, e, "spec", e.Spec)))

	e.Labels["team"] = "b"
	s.exports.set(cluster, e)
	eventually(t, "label update replicated", replicaIs(t, cache, s.name, exportKind, cluster, "widgets", copyOf(s, cluster, e, "spec", e.Spec)))

	s.exports.remove(cluster, "widgets")
	eventually(t, "replica deleted", replicaIs(t, cache, s.name, exportKind, cluster, "widgets", nil))
}

func TestBeingDeletedObjectLosesItsReplica(t *testing.T) {
	cache := startCache(t)
	s := newTestShard("shard-1")
	s.start(t, cache)
	const cluster = logicalcluster.Name("c1")

	e := newExport("widgets", "uid-1", "example.io")
	s.exports.set(cluster, e)
	eventually(t, "replica created", replicaIs(t, cache, s.name, exportKind, cluster, "widgets", copyOf(s, cluster, e, "spec", e.Spec)))
	now := metav1.Now()
	e.DeletionTimestamp, e.Finalizers = &now, []string{"example.io/cleanup"}
	s.exports.set(cluster, e)
	eventually(t, "replica deleted", replicaIs(t, cache, s.name, exportKind, cluster, "widgets", nil))
}

func TestSystemClustersAndUnmarkedRBACAreNotReplicated(t *testing.T) {
	cache := startCache(t)
	s := newTestShard("shard-1")
	s.start(t, cache)
	const cluster = logicalcluster.Name("c1")

	s.exports.set(logicalcluster.SystemAdmin, newExport("system-widgets", "uid-sys", "example.io"))
	s.roles.set(logicalcluster.SystemAdmin, newRole("system-binder", "uid-sys-role", apisGroup))
	s.roles.set(cluster, newRole("unmarked", "uid-unmarked", ""))
	// Keys are handled in order of arrival: once this one is replicated,
	// the ones before were looked at.
	marked := newRole("marked", "uid-marked", apisGroup)
	s.roles.set(cluster, marked)
	eventually(t, "marked role replicated", replicaIs(t, cache, s.name, roleKind, cluster, "marked", copyOf(s, cluster, marked, "rules", marked.Rules)))

	for _, c := range []struct {
		kind    cacheclient.Kind
		cluster logicalcluster.Name
		name    string
	}{{exportKind, logicalcluster.SystemAdmin, "system-widgets"}, {roleKind, logicalcluster.SystemAdmin, "system-binder"}, {roleKind, cluster, "unmarked"}} {
		if err := replicaIs(t, cache, s.name, c.kind, c.cluster, c.name, nil)(); err != nil {
			t.Error(err)
		}
	}

	unmarked := s.roles.get(cluster, "marked").(*rbacv1.ClusterRole)
	delete(unmarked.Annotations, ReplicateAnnotationKey)
	s.roles.set(cluster, unmarked)
	eventually(t, "replica of an unmarked role deleted", replicaIs(t, cache, s.name, roleKind, cluster, "marked", nil))
}

func TestRecreatedObjectGetsANewReplica(t *testing.T) {
	cache := startCache(t)
	s := newTestShard("shard-1")
	s.start(t, cache)
	const cluster = logicalcluster.Name("c1")

	e := newExport("widgets", "uid-1", "example.io")
	s.exports.set(cluster, e)
	eventually(t, "replica created", replicaIs(t, cache, s.name, exportKind, cluster, "widgets", copyOf(s, cluster, e, "spec", e.Spec)))
	again := newExport("widgets", "uid-2", "other.io")
	s.exports.set(cluster, again)
	eventually(t, "replica re-created", replicaIs(t, cache, s.name, exportKind, cluster, "widgets", copyOf(s, cluster, again, "spec", again.Spec)))
}

func TestWipedCacheIsRepopulated(t *testing.T) {
	cache := startCache(t)
	s := newTestShard("shard-1")
	s.start(t, cache)

	e := newExport("widgets", "uid-1", "example.io")
	r := newRole("binder", "uid-r", apisGroup)
	s.exports.set("c1", e)
	s.roles.set("c2", r)
	eventually(t, "export replicated", replicaIs(t, cache, s.name, exportKind, "c1", "widgets", copyOf(s, "c1", e, "spec", e.Spec)))
	eventually(t, "role replicated", replicaIs(t, cache, s.name, roleKind, "c2", "binder", copyOf(s, "c2", r, "rules", r.Rules)))

	cache.wipe(t)
	eventually(t, "export re-replicated", replicaIs(t, cache, s.name, exportKind, "c1", "widgets", copyOf(s, "c1", e, "spec", e.Spec)))
	eventually(t, "role re-replicated", replicaIs(t, cache, s.name, roleKind, "c2", "binder", copyOf(s, "c2", r, "rules", r.Rules)))
}

func TestRestartDeletesReplicasOfObjectsDeletedMeanwhile(t *testing.T) {
	cache := startCache(t)
	s := newTestShard("shard-1")
	_, stop := s.start(t, cache)

	gone, kept := newExport("gone", "uid-gone", "example.io"), newExport("kept", "uid-kept", "example.io")
	s.exports.set("c1", gone)
	s.exports.set("c1", kept)
	eventually(t, "gone replicated", replicaIs(t, cache, s.name, exportKind, "c1", "gone", copyOf(s, "c1", gone, "spec", gone.Spec)))
	eventually(t, "kept replicated", replicaIs(t, cache, s.name, exportKind, "c1", "kept", copyOf(s, "c1", kept, "spec", kept.Spec)))
	stop()

	s.exports.remove("c1", "gone")
	added := newExport("added", "uid-added", "example.io")
	s.exports.set("c2", added)
	s.start(t, cache)
	eventually(t, "replica of an object deleted while stopped deleted", replicaIs(t, cache, s.name, exportKind, "c1", "gone", nil))
	eventually(t, "object added while stopped replicated", replicaIs(t, cache, s.name, exportKind, "c2", "added", copyOf(s, "c2", added, "spec", added.Spec)))
	if err := replicaIs(t, cache, s.name, exportKind, "c1", "kept", copyOf(s, "c1", kept, "spec", kept.Spec))(); err != nil {
		t.Error(err)
	}
}

func TestCacheOutageCatchesUpWhenTheCacheReturns(t *testing.T) {
	cache := startCache(t)
	s := newTestShard("shard-1")
	c, _ := s.start(t, cache)

	gone := newExport("gone", "uid-gone", "example.io")
	s.exports.set("c1", gone)
	eventually(t, "replicated", replicaIs(t, cache, s.name, exportKind, "c1", "gone", copyOf(s, "c1", gone, "spec", gone.Spec)))
	eventually(t, "healthy", func() error { return c.HealthCheck().Check(nil) })

	cache.outage.set(true)
	s.exports.remove("c1", "gone")
	added := newExport("added", "uid-added", "example.io")
	s.exports.set("c1", added)
	eventually(t, "cache reported unreachable", func() error {
		if c.CacheReachable() == nil || c.HealthCheck().Check(nil) == nil {
			return fmt.Errorf("cache still reported reachable")
		}
		return nil
	})

	cache.outage.set(false)
	eventually(t, "replica of an object deleted during the outage deleted", replicaIs(t, cache, s.name, exportKind, "c1", "gone", nil))
	eventually(t, "object added during the outage replicated", replicaIs(t, cache, s.name, exportKind, "c1", "added", copyOf(s, "c1", added, "spec", added.Spec)))
	eventually(t, "healthy again", func() error { return c.HealthCheck().Check(nil) })
}

func TestTwoShardsKeepTheirReplicasApart(t *testing.T) {
	cache := startCache(t)
	a, b := newTestShard("shard-a"), newTestShard("shard-b")
	a.start(t, cache)
	b.start(t, cache)

	ea, eb := newExport("widgets", "uid-a", "a.io"), newExport("widgets", "uid-b", "b.io")
	a.exports.set("ca", ea)
	b.exports.set("cb", eb)
	eventually(t, "a replicated", replicaIs(t, cache, a.name, exportKind, "ca", "widgets", copyOf(a, "ca", ea, "spec", ea.Spec)))
	eventually(t, "b replicated", replicaIs(t, cache, b.name, exportKind, "cb", "widgets", copyOf(b, "cb", eb, "spec", eb.Spec)))
	a.exports.remove("ca", "widgets")
	eventually(t, "a's replica deleted", replicaIs(t, cache, a.name, exportKind, "ca", "widgets", nil))
	if err := replicaIs(t, cache, b.name, exportKind, "cb", "widgets", copyOf(b, "cb", eb, "spec", eb.Spec))(); err != nil {
		t.Error(err)
	}
}

func TestNewRefusesAnInvalidShardName(t *testing.T) {
	for _, name := range []string{"", "*", "Shard_1"} {
		if _, err := New(Config{ShardName: name}); err == nil {
			t.Errorf("New(%q) accepted the shard name", name)
		}
	}
}

// TestAdmissionConfigurationTravelsWithTheWorkspacesExports: a webhook
// configuration is replicated while its logical cluster holds an
// APIExport, and only then.
func TestAdmissionConfigurationTravelsWithTheWorkspacesExports(t *testing.T) {
	cache := startCache(t)
	s := newTestShard("shard-1")
	hooks := newFakeResource(func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} })
	hookKind := kindOf("validatingwebhookconfigurations")
	ctx, cancel := context.WithCancel(context.Background())
	exportInformer := s.exports.informer(&apisv1alpha2.APIExport{}, "wildcard-apiexports")
	hookInformer := hooks.informer(&admissionregistrationv1.ValidatingWebhookConfiguration{}, "wildcard-validatingwebhookconfigurations")
	c, err := New(Config{ShardName: s.name, Cache: cache.writer, Sources: []Source{
		{Kind: exportKind, Informer: exportInformer},
		{Kind: hookKind, Informer: hookInformer, Filter: InExportWorkspace(exportInformer), FilterReads: []*wildcardinformer.Informer{exportInformer}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, run := range []func(){func() { exportInformer.Run(ctx) }, func() { hookInformer.Run(ctx) }, func() { c.Run(ctx, 2) }} {
		wg.Add(1)
		go func() { defer wg.Done(); run() }()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })

	const provider, consumer = logicalcluster.Name("provider"), logicalcluster.Name("consumer")
	hook := func(uid types.UID) *admissionregistrationv1.ValidatingWebhookConfiguration {
		return &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "test-webhook", UID: uid},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "test-webhook.cowboy.io"}}}
	}
	consumerHook := hook("uid-consumer")
	hooks.set(consumer, consumerHook)
	providerHook := hook("uid-provider")
	hooks.set(provider, providerHook)
	s.exports.set(provider, newExport("cowboys", "uid-export", "wildwest.dev"))
	eventually(t, "the provider's webhook replicated", replicaIs(t, cache, s.name, hookKind, provider, "test-webhook", copyOf(s, provider, providerHook, "webhooks", providerHook.Webhooks)))
	if err := replicaIs(t, cache, s.name, hookKind, consumer, "test-webhook", nil)(); err != nil {
		t.Errorf("a workspace without an APIExport: %v", err)
	}

	s.exports.set(consumer, newExport("more-cowboys", "uid-export-2", "wildwest.dev"))
	eventually(t, "the webhook of a workspace that starts exporting replicated", replicaIs(t, cache, s.name, hookKind, consumer, "test-webhook", copyOf(s, consumer, consumerHook, "webhooks", consumerHook.Webhooks)))

	s.exports.remove(provider, "cowboys")
	eventually(t, "the webhook of a workspace that stops exporting unreplicated", replicaIs(t, cache, s.name, hookKind, provider, "test-webhook", nil))
}
