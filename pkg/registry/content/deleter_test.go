package content

import (
	"context"
	"slices"
	"sort"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	api "k8s.io/kubernetes/pkg/apis/core"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/loopback"
)

// object is what a store holds.
type object interface {
	runtime.Object
	metav1.Object
}

// store is an in-memory collection of one resource: objects by cluster,
// namespace and name, each with its finalizers. It counts its calls.
type store struct {
	resource   schema.GroupResource
	namespaced bool
	newList    func() runtime.Object
	mu         sync.Mutex
	objects    map[string]object
	lists      int
	deletes    []string // "cluster/namespace" of each DeleteCollection
	// callers are "user verb resource namespace" of each DeleteCollection.
	callers []string
	updates []string // names of the updated objects
	// stale makes DeleteCollection report the objects as the last List
	// saw them, as a watch cache behind the latest writes would.
	stale  bool
	listed map[string]object
}

func newStore(group, resource string, namespaced bool) *store {
	return &store{resource: schema.GroupResource{Group: group, Resource: resource}, namespaced: namespaced, objects: map[string]object{},
		newList: func() runtime.Object { return &metav1.PartialObjectMetadataList{} }}
}

func (s *store) add(cluster, namespace, name string, finalizers ...string) {
	s.put(cluster, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Finalizers: finalizers}})
}

// put stores o in cluster.
func (s *store) put(cluster string, o object) {
	o.SetAnnotations(map[string]string{"cluster": cluster})
	s.objects[cluster+"/"+o.GetNamespace()+"/"+o.GetName()] = o
}

func (s *store) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for k := range s.objects {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func (s *store) selected(ctx context.Context) []object {
	cluster, _ := logicalcluster.ClusterFromContext(ctx)
	ns := genericapirequest.NamespaceValue(ctx)
	var out []object
	for _, o := range s.objects {
		if o.GetAnnotations()["cluster"] == string(cluster) && (ns == "" || o.GetNamespace() == ns) {
			out = append(out, o)
		}
	}
	return out
}

func listOf(s *store, objects []object) runtime.Object {
	list := s.newList()
	items := make([]runtime.Object, 0, len(objects))
	for _, o := range objects {
		items = append(items, o.DeepCopyObject())
	}
	_ = meta.SetList(list, items)
	return list
}

func (s *store) NamespaceScoped() bool   { return s.namespaced }
func (s *store) NewList() runtime.Object { return s.newList() }
func (s *store) New() runtime.Object     { return &metav1.PartialObjectMetadata{} }
func (s *store) ConvertToTable(context.Context, runtime.Object, runtime.Object) (*metav1.Table, error) {
	return nil, nil
}

func (s *store) List(ctx context.Context, _ *metainternalversion.ListOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists++
	selected := s.selected(ctx)
	s.listed = map[string]object{}
	for _, o := range selected {
		s.listed[o.GetName()] = o.DeepCopyObject().(object)
	}
	return listOf(s, selected), nil
}

// DeleteCollection deletes the selected objects; those with finalizers are
// marked deleted and kept.
func (s *store) DeleteCollection(ctx context.Context, _ rest.ValidateObjectFunc, _ *metav1.DeleteOptions, _ *metainternalversion.ListOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cluster, _ := logicalcluster.ClusterFromContext(ctx)
	s.deletes = append(s.deletes, string(cluster)+"/"+genericapirequest.NamespaceValue(ctx))
	if u, ok := genericapirequest.UserFrom(ctx); ok {
		info, _ := genericapirequest.RequestInfoFrom(ctx)
		s.callers = append(s.callers, u.GetName()+" "+info.Verb+" "+info.Resource+" "+info.Namespace)
	}
	selected := s.selected(ctx)
	reported := make([]object, 0, len(selected))
	for _, o := range selected {
		if old, ok := s.listed[o.GetName()]; ok && s.stale {
			reported = append(reported, old)
		} else {
			reported = append(reported, o)
		}
	}
	for _, o := range selected {
		if len(o.GetFinalizers()) == 0 {
			delete(s.objects, string(cluster)+"/"+o.GetNamespace()+"/"+o.GetName())
		} else {
			now := metav1.Now()
			o.SetDeletionTimestamp(&now)
		}
	}
	return listOf(s, reported), nil
}

// Update updates an object of ctx's cluster (cluster-scoped) from objInfo
// and deletes it when it is deleted and has no finalizers left, as the
// generic registry does.
func (s *store) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc, _ rest.ValidateObjectUpdateFunc, _ bool, _ *metav1.UpdateOptions) (runtime.Object, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.updates = append(s.updates, name)
	k := key(ctx, "/"+name)
	existing, ok := s.objects[k]
	if !ok {
		return nil, false, apierrors.NewNotFound(s.resource, name)
	}
	obj, err := objInfo.UpdatedObject(ctx, existing.DeepCopyObject())
	if err != nil {
		return nil, false, err
	}
	o := obj.(object)
	if o.GetDeletionTimestamp() != nil && len(o.GetFinalizers()) == 0 {
		delete(s.objects, k)
		return o, false, nil
	}
	s.objects[k] = o
	return o.DeepCopyObject(), false, nil
}

// namespaceStore is the namespaces storage with its finalize subresource,
// behaving as Kubernetes': delete makes a namespace terminate, emptying
// spec.finalizers deletes it unless metadata finalizers hold it.
type namespaceStore struct {
	mu         sync.Mutex
	namespaces map[string]*api.Namespace
	gets       int
}

func (s *namespaceStore) add(cluster, name string, finalizers ...string) {
	s.namespaces[cluster+"/"+name] = &api.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers, Annotations: map[string]string{"cluster": cluster}},
		Spec:       api.NamespaceSpec{Finalizers: []api.FinalizerName{api.FinalizerKubernetes}},
	}
}

func key(ctx context.Context, name string) string {
	cluster, _ := logicalcluster.ClusterFromContext(ctx)
	return string(cluster) + "/" + name
}

func (s *namespaceStore) New() runtime.Object     { return &api.Namespace{} }
func (s *namespaceStore) NewList() runtime.Object { return &api.NamespaceList{} }
func (s *namespaceStore) ConvertToTable(context.Context, runtime.Object, runtime.Object) (*metav1.Table, error) {
	return nil, nil
}

func (s *namespaceStore) List(ctx context.Context, _ *metainternalversion.ListOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cluster, _ := logicalcluster.ClusterFromContext(ctx)
	list := &api.NamespaceList{}
	for _, ns := range s.namespaces {
		if ns.Annotations["cluster"] == string(cluster) {
			list.Items = append(list.Items, *ns.DeepCopy())
		}
	}
	return list, nil
}

func (s *namespaceStore) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets++
	ns, ok := s.namespaces[key(ctx, name)]
	if !ok {
		return nil, apierrors.NewNotFound(namespacesResource, name)
	}
	return ns.DeepCopy(), nil
}

func (s *namespaceStore) Delete(ctx context.Context, name string, _ rest.ValidateObjectFunc, _ *metav1.DeleteOptions) (runtime.Object, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns, ok := s.namespaces[key(ctx, name)]
	if !ok {
		return nil, false, apierrors.NewNotFound(namespacesResource, name)
	}
	if ns.DeletionTimestamp == nil {
		now := metav1.Now()
		ns.DeletionTimestamp, ns.Status.Phase = &now, api.NamespaceTerminating
	}
	return ns.DeepCopy(), false, nil
}

// finalizeStore is the finalize subresource of a namespaceStore.
type finalizeStore struct{ *namespaceStore }

func (s finalizeStore) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc, _ rest.ValidateObjectUpdateFunc, _ bool, _ *metav1.UpdateOptions) (runtime.Object, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	existing, ok := s.namespaces[key(ctx, name)]
	if !ok {
		return nil, false, apierrors.NewNotFound(namespacesResource, name)
	}
	obj, err := objInfo.UpdatedObject(ctx, existing.DeepCopy())
	if err != nil {
		return nil, false, err
	}
	ns := obj.(*api.Namespace)
	if len(ns.Spec.Finalizers) == 0 && len(ns.Finalizers) == 0 && ns.DeletionTimestamp != nil {
		delete(s.namespaces, key(ctx, name))
		return ns, false, nil
	}
	s.namespaces[key(ctx, name)] = ns
	return ns.DeepCopy(), false, nil
}

// fakeCluster is a Deleter over in-memory storages of a few resources.
type fakeCluster struct {
	deleter                                             *Deleter
	namespaces                                          *namespaceStore
	crds, configMaps, secrets, apiBindings, nodes, crbs *store
}

func newFakeCluster() *fakeCluster {
	f := &fakeCluster{
		namespaces:  &namespaceStore{namespaces: map[string]*api.Namespace{}},
		crds:        newStore("apiextensions.k8s.io", "customresourcedefinitions", false),
		configMaps:  newStore("", "configmaps", true),
		secrets:     newStore("", "secrets", true),
		apiBindings: newStore("apis.kcp.io", "apibindings", false),
		nodes:       newStore("", "nodes", false),
		crbs:        newStore("rbac.authorization.k8s.io", "clusterrolebindings", false),
	}
	f.apiBindings.newList = func() runtime.Object { return &apisv1alpha2.APIBindingList{} }
	e := func(s *store) entry { return entry{resource: s.resource, storage: s} }
	native := map[schema.GroupResource]bool{
		namespacesResource: true,
		{Group: "tenancy.kcp.io", Resource: "workspaces"}:     true,
		{Group: "tenancy.kcp.io", Resource: "workspacetypes"}: true,
	}
	for _, s := range f.stores() {
		native[s.resource] = true
	}
	f.deleter = &Deleter{
		first:         []entry{e(f.crds)},
		namespaced:    []entry{e(f.configMaps), e(f.secrets)},
		clusterScoped: []entry{e(f.apiBindings), e(f.nodes)},
		last:          []entry{e(f.crbs)},
		namespaces:    f.namespaces, namespaceGetter: f.namespaces, namespaceDeleter: f.namespaces,
		finalize: finalizeStore{f.namespaces},
		bindings: f.apiBindings, native: native,
	}
	return f
}

// addBinding adds an APIBinding of cluster that binds resources, with
// finalizers besides the binding finalizer every binding is created with.
func (f *fakeCluster) addBinding(cluster, name string, resources []schema.GroupResource, finalizers ...string) {
	b := &apisv1alpha2.APIBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: append([]string{apisv1alpha2.APIBindingFinalizer}, finalizers...)}}
	for _, r := range resources {
		b.Status.BoundResources = append(b.Status.BoundResources, apisv1alpha2.BoundAPIResource{Group: r.Group, Resource: r.Resource})
	}
	f.apiBindings.put(cluster, b)
}

var (
	// tenancy are the resources of a workspace's default binding, which
	// the shard serves itself.
	tenancy = []schema.GroupResource{{Group: "tenancy.kcp.io", Resource: "workspaces"}, {Group: "tenancy.kcp.io", Resource: "workspacetypes"}}
	// widgets is a resource bound from an APIExport's schema.
	widgets = []schema.GroupResource{{Group: "example.com", Resource: "widgets"}}
)

func (f *fakeCluster) stores() []*store {
	return []*store{f.crds, f.configMaps, f.secrets, f.apiBindings, f.nodes, f.crbs}
}

func TestDeleteEmptiesTheClusterAndKeepsRBACUntilNothingElseIsHeld(t *testing.T) {
	f := newFakeCluster()
	f.namespaces.add("c", "default")
	f.namespaces.add("c", "kube-system")
	f.namespaces.add("other", "default")
	f.configMaps.add("c", "default", "kube-root-ca.crt")
	f.configMaps.add("c", "kube-system", "kube-root-ca.crt")
	f.configMaps.add("other", "default", "kube-root-ca.crt")
	f.addBinding("c", "widgets", widgets)
	f.crbs.add("c", "", "workspace-admin")
	f.crbs.add("other", "", "workspace-admin")

	remaining, err := f.deleter.Delete(context.Background(), "c", "42")
	if err != nil {
		t.Fatal(err)
	}
	if remaining.Resources[f.apiBindings.resource] != 1 || remaining.Finalizers["apis.kcp.io/apibinding-finalizer"] != 1 || len(remaining.Resources) != 1 {
		t.Errorf("first pass left %v, want the APIBinding held by its finalizer", remaining)
	}
	if got, want := f.configMaps.names(), []string{"other/default/kube-root-ca.crt"}; !slices.Equal(got, want) {
		t.Errorf("configmaps after the first pass: %v, want %v", got, want)
	}
	if got := f.crbs.names(); len(got) != 2 {
		t.Errorf("clusterrolebindings deleted while an APIBinding holds the cluster: left %v", got)
	}
	if _, err := f.namespaces.Get(logicalcluster.WithCluster(context.Background(), "c"), "default", nil); !apierrors.IsNotFound(err) {
		t.Errorf("namespace default of c not gone after the first pass: %v", err)
	}
	if _, err := f.namespaces.Get(logicalcluster.WithCluster(context.Background(), "other"), "default", nil); err != nil {
		t.Errorf("namespace default of another cluster: %v", err)
	}

	// The binding's controller lets it go; the next pass deletes RBAC.
	f.apiBindings.objects = map[string]object{}
	remaining, err = f.deleter.Delete(context.Background(), "c", "43")
	if err != nil {
		t.Fatal(err)
	}
	if !remaining.Empty() {
		t.Errorf("second pass left %v, want nothing", remaining)
	}
	if got, want := f.crbs.names(), []string{"other//workspace-admin"}; !slices.Equal(got, want) {
		t.Errorf("clusterrolebindings after the second pass: %v, want %v", got, want)
	}
}

func TestDeleteListsEachResourceOncePerPassAndDeletesOnlyWhatHasObjects(t *testing.T) {
	f := newFakeCluster()
	f.namespaces.add("c", "default")
	f.namespaces.add("c", "kube-system")
	f.configMaps.add("c", "default", "kube-root-ca.crt")
	f.crbs.add("c", "", "workspace-admin")

	remaining, err := f.deleter.Delete(context.Background(), "c", "42")
	if err != nil {
		t.Fatal(err)
	}
	if !remaining.Empty() {
		t.Fatalf("left %v, want nothing", remaining)
	}
	for _, s := range f.stores() {
		if s.lists != 1 {
			t.Errorf("%s listed %d times in one pass, want once", s.resource, s.lists)
		}
	}
	if got, want := f.configMaps.deletes, []string{"c/default"}; !slices.Equal(got, want) {
		t.Errorf("configmaps deleted in %v, want only %v", got, want)
	}
	for _, s := range []*store{f.crds, f.secrets, f.apiBindings, f.nodes} {
		if len(s.deletes) > 0 {
			t.Errorf("%s without objects deleted in %v", s.resource, s.deletes)
		}
	}
	if f.namespaces.gets != 0 {
		t.Errorf("namespaces read %d times; the finalize update starts from the stored namespace", f.namespaces.gets)
	}
	if got := f.crbs.names(); len(got) != 0 {
		t.Errorf("clusterrolebindings left: %v", got)
	}
}

func TestDeleteEmptiesNamespacesThatAreGoneAndHonoursNamespaceFinalizers(t *testing.T) {
	f := newFakeCluster()
	f.namespaces.add("c", "held", "example.com/hold")
	f.secrets.add("c", "gone", "orphan")
	f.secrets.add("c", "held", "s")

	remaining, err := f.deleter.Delete(context.Background(), "c", "42")
	if err != nil {
		t.Fatal(err)
	}
	if got := f.secrets.names(); len(got) != 0 {
		t.Errorf("secrets left: %v", got)
	}
	if remaining.Resources[namespacesResource] != 1 || remaining.Finalizers["example.com/hold"] != 1 {
		t.Errorf("left %v, want the namespace held by example.com/hold", remaining)
	}
	ns, err := f.namespaces.Get(logicalcluster.WithCluster(context.Background(), "c"), "held", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := ns.(*api.Namespace); n.DeletionTimestamp == nil || len(n.Spec.Finalizers) != 0 {
		t.Errorf("held namespace: deletionTimestamp %v, spec.finalizers %v; want terminating and finalized", n.DeletionTimestamp, n.Spec.Finalizers)
	}
}

func TestDeleteReleasesADefaultBindingAndEmptiesTheClusterInOnePass(t *testing.T) {
	f := newFakeCluster()
	// The watch cache has not seen the release when the bindings are deleted.
	f.apiBindings.stale = true
	f.namespaces.add("c", "default")
	f.configMaps.add("c", "default", "kube-root-ca.crt")
	f.addBinding("c", "tenancy.kcp.io-abcde", tenancy)
	f.addBinding("other", "tenancy.kcp.io-fghij", tenancy)
	f.crbs.add("c", "", "workspace-admin")

	remaining, err := f.deleter.Delete(context.Background(), "c", "42")
	if err != nil {
		t.Fatal(err)
	}
	if !remaining.Empty() {
		t.Errorf("left %v, want nothing after one pass", remaining)
	}
	if got, want := f.apiBindings.names(), []string{"other//tenancy.kcp.io-fghij"}; !slices.Equal(got, want) {
		t.Errorf("apibindings left: %v, want only the other cluster's %v", got, want)
	}
	if got, want := f.apiBindings.updates, []string{"tenancy.kcp.io-abcde"}; !slices.Equal(got, want) {
		t.Errorf("apibindings updated: %v, want %v", got, want)
	}
	if got := f.crbs.names(); len(got) != 0 {
		t.Errorf("clusterrolebindings left: %v", got)
	}
}

func TestDeleteLeavesBindingsOfBoundResourcesAndForeignFinalizersAlone(t *testing.T) {
	for _, tc := range []struct {
		name       string
		resources  []schema.GroupResource
		finalizers []string
		// updated tells whether the deleter releases the binding finalizer.
		updated bool
		// holding are the finalizers that still hold the binding.
		holding []string
	}{
		{name: "bound from an export", resources: widgets, holding: []string{apisv1alpha2.APIBindingFinalizer}},
		{name: "some resources bound from an export", resources: append(slices.Clone(tenancy), widgets...), holding: []string{apisv1alpha2.APIBindingFinalizer}},
		{name: "default binding with a finalizer of its own", resources: tenancy, finalizers: []string{"example.com/hold"}, updated: true, holding: []string{"example.com/hold"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCluster()
			f.apiBindings.stale = true
			f.addBinding("c", "b", tc.resources, tc.finalizers...)
			f.crbs.add("c", "", "workspace-admin")

			remaining, err := f.deleter.Delete(context.Background(), "c", "42")
			if err != nil {
				t.Fatal(err)
			}
			if got := len(f.apiBindings.updates) > 0; got != tc.updated {
				t.Errorf("binding updated: %v, want %v", got, tc.updated)
			}
			want := Remaining{}
			want.add(f.apiBindings.resource, tc.holding)
			if remaining.String() != want.String() {
				t.Errorf("left %q, want %q", remaining, want)
			}
			obj, ok := f.apiBindings.objects["c//b"]
			if !ok {
				t.Fatal("binding gone, want it held")
			}
			if got := obj.GetFinalizers(); obj.GetDeletionTimestamp() == nil || !slices.Equal(got, tc.holding) {
				t.Errorf("binding: deletionTimestamp %v, finalizers %v; want deleted and held by %v", obj.GetDeletionTimestamp(), got, tc.holding)
			}
			if got := f.crbs.names(); len(got) != 1 {
				t.Errorf("clusterrolebindings deleted while a binding holds the cluster: left %v", got)
			}
		})
	}
}

func TestReleasedKeepsTheFinalizerOfABindingThatHasBoundAnExportedResourceSince(t *testing.T) {
	f := newFakeCluster()
	stored := &apisv1alpha2.APIBinding{ObjectMeta: metav1.ObjectMeta{Name: "b", Finalizers: []string{apisv1alpha2.APIBindingFinalizer}}}
	stored.Status.BoundResources = []apisv1alpha2.BoundAPIResource{{Group: "example.com", Resource: "widgets"}}
	obj, err := f.deleter.released(context.Background(), stored.DeepCopy(), stored)
	if err != nil {
		t.Fatal(err)
	}
	if got := obj.(*apisv1alpha2.APIBinding).Finalizers; !slices.Equal(got, stored.Finalizers) {
		t.Errorf("finalizers %v, want %v kept", got, stored.Finalizers)
	}
}

func TestDeleteCallsTheStoragesAsTheShardWithTheirRequestInfo(t *testing.T) {
	f := newFakeCluster()
	f.namespaces.add("c", "default")
	f.configMaps.add("c", "default", "kube-root-ca.crt")
	if _, err := f.deleter.Delete(context.Background(), "c", ""); err != nil {
		t.Fatal(err)
	}
	want := []string{loopback.ShardUser.GetName() + " deletecollection configmaps default"}
	if !slices.Equal(f.configMaps.callers, want) {
		t.Errorf("config maps deleted by %q, want %q", f.configMaps.callers, want)
	}
}
