package garbagecollector

import (
	"context"
	"slices"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/shardplane/shardplane/pkg/apiextensions"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func forceCRD(cluster logicalcluster.Name, versions ...string) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "theforces.force.example.io", Annotations: map[string]string{logicalcluster.AnnotationKey: string(cluster)}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "force.example.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "theforces", Kind: "TheForce"},
			Scope: apiextensionsv1.NamespaceScoped,
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
			{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue},
		}},
	}
	for i, v := range versions {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true, Storage: i == 0})
	}
	return crd
}

func TestResourceInUsesAVersionTheObjectsClusterServes(t *testing.T) {
	c, _ := testController(t, nil)
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{forceCRD("a", "v1"), forceCRD("b", "v2")} {
		if err := c.crds.Indexer().Add(crd); err != nil {
			t.Fatal(err)
		}
	}
	watched := schema.GroupVersionResource{Group: "force.example.io", Version: "v1", Resource: "theforces"}
	for cluster, want := range map[logicalcluster.Name]string{"a": "v1", "b": "v2", "c": "v1"} {
		if got := c.resourceIn(cluster, watched).Version; got != want {
			t.Errorf("resourceIn(%s) = %s, want %s", cluster, got, want)
		}
	}
	cm := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	if got := c.resourceIn("a", cm); got != cm {
		t.Errorf("built-in resource became %v", got)
	}
}

func TestMonitorMovesToAVersionSomeCRDStillServes(t *testing.T) {
	c, _ := testController(t, nil)
	if err := c.crds.AddIndexers(cache.Indexers{byCRDName: func(obj interface{}) ([]string, error) {
		return []string{obj.(*apiextensionsv1.CustomResourceDefinition).Name}, nil
	}}); err != nil {
		t.Fatal(err)
	}
	scheme := fake.NewTestScheme()
	if err := metav1.AddMetaToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c.wildcardMetadata = fake.NewSimpleMetadataClient(scheme)
	c.monitors = map[schema.GroupResource]*monitor{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.runCtx = ctx
	gr := schema.GroupResource{Group: "force.example.io", Resource: "theforces"}
	version := func() string {
		c.mu.Lock()
		defer c.mu.Unlock()
		if m := c.monitors[gr]; m != nil {
			return m.resource.Version
		}
		return ""
	}

	a, b := forceCRD("a", "v1"), forceCRD("b", "v2")
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{a, b} {
		if err := c.crds.Indexer().Add(crd); err != nil {
			t.Fatal(err)
		}
		c.syncResource(crdGroupResource(crd.Name))
	}
	first := version()
	if first != "v1" && first != "v2" {
		t.Fatalf("watching %q, want a served version", first)
	}
	gone := a
	if first == "v2" {
		gone = b
	}
	if err := c.crds.Indexer().Delete(gone); err != nil {
		t.Fatal(err)
	}
	c.syncResource(crdGroupResource(gone.Name))
	if got := version(); got == first || got == "" {
		t.Errorf("watching %q after the CRD serving %s went, want the other version", got, first)
	}
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{a, b} {
		_ = c.crds.Indexer().Delete(crd)
	}
	c.syncResource(crdGroupResource(a.Name))
	if got := version(); got != "" {
		t.Errorf("still watching %q without CRDs", got)
	}
}

// A relist is the only word of the deletion of an owner the graph keeps no
// node of, when its delete event was missed: a relist without it asks to
// look at its dependents, one with it does not.
func TestRelistWithoutAnUnobservedOwnerChecksItsDependents(t *testing.T) {
	c, _ := testController(t, nil)
	looked := make(chan string, 10)
	c.deletes = loop.New("test-delete", func(_ context.Context, key string) error {
		looked <- key
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.deletes.Run(ctx, 1)
	// next returns the next key looked at, after the keys enqueued before.
	next := func() string {
		t.Helper()
		select {
		case k := <-looked:
			return k
		case <-time.After(10 * time.Second):
			t.Fatal("nothing looked at")
			return ""
		}
	}
	s := &monitorStore{c: c, m: &monitor{resource: configMaps}}
	owner := partial("c", "owner", "owner")
	dep := partial("c", "dep", "dep", metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "owner"})
	depKey := keyString(nodeKey{"c", "dep"})

	if err := s.Replace([]interface{}{owner, dep}, "1"); err != nil {
		t.Fatal(err)
	}
	if k := next(); k != depKey { // a new dependent is looked at
		t.Fatalf("looked at %q, want %q", k, depKey)
	}
	if c.graph.get(nodeKey{"c", "owner"}) != nil {
		t.Fatal("the owner, listed before anything named it, has a node")
	}

	// The owner's deletion was missed: the relist does not have it.
	if err := s.Replace([]interface{}{dep}, "2"); err != nil {
		t.Fatal(err)
	}
	if k := next(); k != depKey {
		t.Fatalf("looked at %q after the owner went, want %q", k, depKey)
	}

	// Listed again with its owner (recreated, say): nothing to look at.
	if err := s.Replace([]interface{}{owner, dep}, "3"); err != nil {
		t.Fatal(err)
	}
	c.deletes.Enqueue("sentinel")
	if k := next(); k != "sentinel" {
		t.Fatalf("a relist with the owner asked to look at %q", k)
	}
}

// fakeBound is the BoundAPIs of clusters that bind the given resources.
type fakeBound map[logicalcluster.Name][]apiextensions.BoundResource

func (f fakeBound) Get(cluster logicalcluster.Name, group, resource string) (apiextensions.BoundResource, bool) {
	for _, br := range f[cluster] {
		if br.CRD.Spec.Group == group && br.CRD.Spec.Names.Plural == resource {
			return br, true
		}
	}
	return apiextensions.BoundResource{}, false
}
func (f fakeBound) List(cluster logicalcluster.Name) []apiextensions.BoundResource { return f[cluster] }
func (f fakeBound) ForIdentity(string, string, string) (apiextensions.BoundResource, bool) {
	return apiextensions.BoundResource{}, false
}
func (f fakeBound) ForGroupResource(group, resource string) []apiextensions.BoundResource {
	var out []apiextensions.BoundResource
	for cluster := range f {
		if br, ok := f.Get(cluster, group, resource); ok {
			out = append(out, br)
		}
	}
	return out
}
func (f fakeBound) InUse(types.UID, string) bool { return false }

func TestBoundResourcesResolveInTheClustersThatBindThem(t *testing.T) {
	c, _ := testController(t, nil)
	c.bound = fakeBound{"a": {{CRD: forceCRD("", "v2"), IdentityHash: "id"}}}
	gvr, namespaced, err := c.mapping("a", "force.example.io/v1", "TheForce")
	if err != nil || !namespaced || gvr != (schema.GroupVersionResource{Group: "force.example.io", Version: "v2", Resource: "theforces"}) {
		t.Errorf("mapping in the binding cluster = %v, %v, %v", gvr, namespaced, err)
	}
	if gvr, _, err := c.mapping("b", "force.example.io/v1", "TheForce"); err == nil {
		t.Errorf("mapping in a cluster that binds nothing = %v", gvr)
	}
	watched := schema.GroupVersionResource{Group: "force.example.io", Version: "v1", Resource: "theforces"}
	if got := c.resourceIn("a", watched).Version; got != "v2" {
		t.Errorf("resourceIn(a) = %s, want the bound v2", got)
	}
}

// Every object a monitor lists or sees created or updated is observed,
// with the resource watched; deletions are not.
func TestMonitorsHandListedAndChangedObjectsToTheObserver(t *testing.T) {
	c, _ := testController(t, nil)
	var seen []string
	c.observe = func(resource schema.GroupVersionResource, obj metav1.Object) {
		if resource != configMaps {
			t.Errorf("observed %s in %v, want %v", obj.GetName(), resource, configMaps)
		}
		seen = append(seen, obj.GetName())
	}
	s := &monitorStore{c: c, m: &monitor{resource: configMaps}}
	if err := s.Replace([]interface{}{partial("c", "listed", "1")}, "1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(partial("c", "created", "2")); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(partial("c", "updated", "3")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(partial("c", "deleted", "4")); err != nil {
		t.Fatal(err)
	}
	if want := []string{"listed", "created", "updated"}; !slices.Equal(seen, want) {
		t.Errorf("observed %v, want %v", seen, want)
	}
}
