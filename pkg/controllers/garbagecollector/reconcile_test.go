package garbagecollector

import (
	"context"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

func partial(cluster logicalcluster.Name, name string, uid types.UID, owners ...metav1.OwnerReference) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "default", Name: name, UID: uid, ResourceVersion: "1", OwnerReferences: owners,
			Annotations: map[string]string{logicalcluster.AnnotationKey: string(cluster)},
		},
	}
}

// testController is a collector over fake per-cluster metadata clients.
func testController(t *testing.T, objects map[logicalcluster.Name][]runtime.Object) (*Controller, map[logicalcluster.Name]*fake.FakeMetadataClient) {
	t.Helper()
	scheme := fake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	clients := map[logicalcluster.Name]*fake.FakeMetadataClient{}
	for cluster, objs := range objects {
		clients[cluster] = fake.NewSimpleMetadataClient(scheme, objs...)
	}
	crds := wildcardinformer.New(&cache.ListWatch{}, &apiextensionsv1.CustomResourceDefinition{}, "test")
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	c := &Controller{
		crds:          crds,
		graph:         newGraph(),
		builtinMapper: mapper,
		clusterMetadata: func(cluster logicalcluster.Name) (metadata.Interface, error) {
			return clients[cluster], nil
		},
	}
	c.deletes = loop.New("test-delete", c.attemptToDelete)
	c.orphans = loop.New("test-orphan", c.attemptToOrphan)
	return c, clients
}

func exists(t *testing.T, c metadata.Interface, name string) bool {
	t.Helper()
	_, err := c.Resource(configMaps).Namespace("default").Get(context.Background(), name, metav1.GetOptions{})
	return err == nil
}

// The owner UID of a dependent in cluster b exists only in cluster a: the
// dependent's owner is absent and it is collected; a's objects are not
// touched.
func TestAttemptToDeleteResolvesOwnersInTheDependentsCluster(t *testing.T) {
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "uid-a"}
	c, clients := testController(t, map[logicalcluster.Name][]runtime.Object{
		"a": {partial("a", "owner", "uid-a"), partial("a", "dep", "dep-a", ref)},
		"b": {partial("b", "owner", "uid-b"), partial("b", "dep", "dep-b", ref)},
	})
	for _, n := range []*node{cm("a", "uid-a"), cm("b", "uid-b")} {
		n.name = "owner"
		c.graph.upsert(n)
	}
	depA, depB := cm("a", "dep-a", "uid-a"), cm("b", "dep-b", "uid-a")
	depA.name, depB.name = "dep", "dep"
	c.graph.upsert(depA)
	c.graph.upsert(depB)

	ctx := context.Background()
	for _, k := range []nodeKey{depA.key, depB.key} {
		if err := c.attemptToDelete(ctx, keyString(k)); err != nil {
			t.Fatalf("attemptToDelete(%v): %v", k, err)
		}
	}
	if !exists(t, clients["a"], "dep") {
		t.Errorf("a/dep was deleted, but its owner exists in a")
	}
	if exists(t, clients["b"], "dep") {
		t.Errorf("b/dep still exists, but its owner UID does not exist in b")
	}
}

func TestAttemptToDeleteKeepsObjectsWithASolidOwner(t *testing.T) {
	solidRef := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "owner"}
	goneRef := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "gone", UID: "gone"}
	c, clients := testController(t, map[logicalcluster.Name][]runtime.Object{
		"c": {partial("c", "owner", "owner"), partial("c", "dep", "dep", solidRef, goneRef)},
	})
	owner := cm("c", "owner")
	owner.name = "owner"
	c.graph.upsert(owner)
	dep := cm("c", "dep", "owner", "gone")
	dep.name = "dep"
	c.graph.upsert(dep)

	if err := c.attemptToDelete(context.Background(), keyString(dep.key)); err != nil {
		t.Fatal(err)
	}
	got, err := clients["c"].Resource(configMaps).Namespace("default").Get(context.Background(), "dep", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("dependent with a solid owner was deleted: %v", err)
	}
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != "owner" {
		t.Errorf("ownerReferences = %v, want only the solid owner", got.OwnerReferences)
	}
}
