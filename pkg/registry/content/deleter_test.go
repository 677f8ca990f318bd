package content

import (
	"context"
	"slices"
	"sort"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/kplane-dev/kplane/pkg/logicalcluster"
)

// store is an in-memory collection of one resource: objects by cluster,
// namespace and name, each with its finalizers. It counts its calls.
type store struct {
	resource   schema.GroupResource
	namespaced bool
	mu         sync.Mutex
	objects    map[string]*metav1.PartialObjectMetadata
	lists      int
	deletes    []string // "cluster/namespace" of each DeleteCollection
}

func newStore(group, resource string, namespaced bool) *store {
	return &store{resource: schema.GroupResource{Group: group, Resource: resource}, namespaced: namespaced, objects: map[string]*metav1.PartialObjectMetadata{}}
}

func (s *store) add(cluster, namespace, name string, finalizers ...string) {
	s.objects[cluster+"/"+namespace+"/"+name] = &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: namespace, Name: name, Finalizers: finalizers, Annotations: map[string]string{"cluster": cluster},
	}}
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

func (s *store) selected(ctx context.Context) []*metav1.PartialObjectMetadata {
	cluster, _ := logicalcluster.ClusterFromContext(ctx)
	ns := genericapirequest.NamespaceValue(ctx)
	var out []*metav1.PartialObjectMetadata
	for _, o := range s.objects {
		if o.Annotations["cluster"] == string(cluster) && (ns == "" || o.Namespace == ns) {
			out = append(out, o)
		}
	}
	return out
}

func (s *store) NamespaceScoped() bool   { return s.namespaced }
func (s *store) NewList() runtime.Object { return &metav1.PartialObjectMetadataList{} }
func (s *store) ConvertToTable(context.Context, runtime.Object, runtime.Object) (*metav1.Table, error) {
	return nil, nil
}

func (s *store) List(ctx context.Context, _ *metainternalversion.ListOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists++
	list := &metav1.PartialObjectMetadataList{}
	for _, o := range s.selected(ctx) {
		list.Items = append(list.Items, *o.DeepCopy())
	}
	return list, nil
}

// DeleteCollection deletes the selected objects; those with finalizers are
// marked deleted and kept.
func (s *store) DeleteCollection(ctx context.Context, _ rest.ValidateObjectFunc, _ *metav1.DeleteOptions, _ *metainternalversion.ListOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cluster, _ := logicalcluster.ClusterFromContext(ctx)
	s.deletes = append(s.deletes, string(cluster)+"/"+genericapirequest.NamespaceValue(ctx))
	list := &metav1.PartialObjectMetadataList{}
	for _, o := range s.selected(ctx) {
		if len(o.Finalizers) == 0 {
			delete(s.objects, string(cluster)+"/"+o.Namespace+"/"+o.Name)
		} else {
			now := metav1.Now()
			o.DeletionTimestamp = &now
		}
		list.Items = append(list.Items, *o.DeepCopy())
	}
	return list, nil
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
	e := func(s *store) entry { return entry{resource: s.resource, storage: s} }
	f.deleter = &Deleter{
		first:         []entry{e(f.crds)},
		namespaced:    []entry{e(f.configMaps), e(f.secrets)},
		clusterScoped: []entry{e(f.apiBindings), e(f.nodes)},
		last:          []entry{e(f.crbs)},
		namespaces:    f.namespaces, namespaceGetter: f.namespaces, namespaceDeleter: f.namespaces,
		finalize: finalizeStore{f.namespaces},
	}
	return f
}

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
	f.apiBindings.add("c", "", "tenancy", "apis.kcp.io/apibinding-finalizer")
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
	f.apiBindings.objects = map[string]*metav1.PartialObjectMetadata{}
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
