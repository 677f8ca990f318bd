package shard

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/apis/rbac"

	"github.com/shardplane/shardplane/pkg/authorization/clusterrbac"
	sacontroller "github.com/shardplane/shardplane/pkg/controllers/serviceaccount"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// internalStorage stands for the REST storage of a Kubernetes kind: it
// lists and watches the kind's internal type, and records the options it
// was asked with.
type internalStorage struct {
	list     func() runtime.Object
	mu       sync.Mutex
	opts     []*metainternalversion.ListOptions
	watchers chan *watch.FakeWatcher
}

func newInternalStorage(list func() runtime.Object) *internalStorage {
	return &internalStorage{list: list, watchers: make(chan *watch.FakeWatcher, 10)}
}

func (s *internalStorage) New() runtime.Object     { return nil }
func (s *internalStorage) Destroy()                {}
func (s *internalStorage) NewList() runtime.Object { return s.list() }
func (s *internalStorage) options() []*metainternalversion.ListOptions {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*metainternalversion.ListOptions(nil), s.opts...)
}

func (s *internalStorage) ConvertToTable(context.Context, runtime.Object, runtime.Object) (*metav1.Table, error) {
	return nil, errors.New("not implemented")
}

func (s *internalStorage) List(_ context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts = append(s.opts, opts)
	return s.list(), nil
}

func (s *internalStorage) Watch(_ context.Context, opts *metainternalversion.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts = append(s.opts, opts)
	w := watch.NewFakeWithChanSize(10, false)
	s.watchers <- w
	return w, nil
}

func internalMeta(cluster logicalcluster.Name, namespace, name, rv string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name, ResourceVersion: rv,
		Annotations: map[string]string{logicalcluster.AnnotationKey: string(cluster)}}
}

func TestRBACChangeThroughTheStorageReachesTheAuthorizer(t *testing.T) {
	rbacGV := rbacv1.SchemeGroupVersion
	roles := newInternalStorage(func() runtime.Object {
		return &rbac.RoleList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: []rbac.Role{{
			ObjectMeta: internalMeta("team-a", "ns", "reader", "1"),
			Rules:      []rbac.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}},
		}}}
	})
	bindings := newInternalStorage(func() runtime.Object { return &rbac.RoleBindingList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}} })
	storages := map[schema.GroupVersionResource]rest.Storage{
		rbacGV.WithResource("roles"):        roles,
		rbacGV.WithResource("rolebindings"): bindings,
		rbacGV.WithResource("clusterroles"): newInternalStorage(func() runtime.Object {
			return &rbac.ClusterRoleList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
		}),
		rbacGV.WithResource("clusterrolebindings"): newInternalStorage(func() runtime.Object {
			return &rbac.ClusterRoleBindingList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}
		}),
	}
	storage := &inProcessStorage{}
	storage.install(func(gvr schema.GroupVersionResource) rest.Storage { return storages[gvr] })
	informers := newWildcardInformers(storage)
	authz := clusterrbac.New(informers.rbac)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rbacInformers := []*wildcardinformer.Informer{informers.rbac.Roles, informers.rbac.RoleBindings, informers.rbac.ClusterRoles, informers.rbac.ClusterRoleBindings}
	for _, inf := range rbacInformers {
		go inf.Run(ctx)
	}
	if err := wildcardinformer.WaitForSync(ctx, rbacInformers...); err != nil {
		t.Fatal(err)
	}
	if obj, exists, err := informers.rbac.Roles.Get("team-a", "ns", "reader"); err != nil || !exists {
		t.Fatalf("listed role: exists %v, %v", exists, err)
	} else if role, ok := obj.(*rbacv1.Role); !ok || len(role.Rules) != 1 || role.Rules[0].Resources[0] != "secrets" {
		t.Fatalf("listed role is %#v, want the storage's role as rbac/v1", obj)
	}

	decision := func() authorizer.Decision {
		attr := authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "alice"}, Verb: "get", Resource: "secrets", Namespace: "ns", Name: "s", ResourceRequest: true}
		d, _, _ := authz.Authorize(logicalcluster.WithCluster(context.Background(), "team-a"), attr)
		return d
	}
	eventually := func(want authorizer.Decision) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
			return decision() == want, nil
		}); err != nil {
			t.Fatalf("alice get secrets in team-a: decision %v, want %v", decision(), want)
		}
	}
	if d := decision(); d != authorizer.DecisionNoOpinion {
		t.Fatalf("alice get secrets before the binding: decision %v, want no opinion", d)
	}

	w := <-bindings.watchers
	binding := &rbac.RoleBinding{ObjectMeta: internalMeta("team-a", "ns", "alice-reads", "2"),
		RoleRef:  rbac.RoleRef{APIGroup: rbac.GroupName, Kind: "Role", Name: "reader"},
		Subjects: []rbac.Subject{{Kind: rbac.UserKind, APIGroup: rbac.GroupName, Name: "alice"}}}
	w.Add(binding)
	eventually(authorizer.DecisionAllow)

	gone := binding.DeepCopy()
	gone.ResourceVersion = "3"
	w.Delete(gone)
	eventually(authorizer.DecisionNoOpinion)
}

func TestServiceAccountInformersSelectTheirObjectsInTheStorage(t *testing.T) {
	accounts := newInternalStorage(func() runtime.Object {
		return &core.ServiceAccountList{ListMeta: metav1.ListMeta{ResourceVersion: "1"},
			Items: []core.ServiceAccount{{ObjectMeta: internalMeta("team-a", "ns", "default", "1")}}}
	})
	configMaps := newInternalStorage(func() runtime.Object { return &core.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}} })
	secrets := newInternalStorage(func() runtime.Object { return &core.SecretList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}} })
	storages := map[string]rest.Storage{"serviceaccounts": accounts, "configmaps": configMaps, "secrets": secrets}
	storage := &inProcessStorage{}
	storage.install(func(gvr schema.GroupVersionResource) rest.Storage {
		if gvr.GroupVersion() != corev1.SchemeGroupVersion {
			return nil
		}
		return storages[gvr.Resource]
	})
	saLW, cmLW := sacontroller.ListWatches(storage.core)
	informers := map[*internalStorage]*wildcardinformer.Informer{
		accounts:   wildcardinformer.New(saLW, &corev1.ServiceAccount{}, "accounts"),
		configMaps: wildcardinformer.New(cmLW, &corev1.ConfigMap{}, "configmaps"),
		secrets:    wildcardinformer.New(sacontroller.TokenSecretsListWatch(storage.core), &corev1.Secret{}, "secrets"),
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, inf := range informers {
		go inf.Run(ctx)
	}
	for s, inf := range informers {
		if err := wildcardinformer.WaitForSync(ctx, inf); err != nil {
			t.Fatal(err)
		}
		<-s.watchers // the informer watches
	}

	for s, want := range map[*internalStorage]string{accounts: "metadata.name=default", configMaps: "metadata.name=kube-root-ca.crt", secrets: "type=kubernetes.io/service-account-token"} {
		opts := s.options()
		if len(opts) != 2 {
			t.Fatalf("storage asked %d times, want a list and a watch", len(opts))
		}
		for _, o := range opts {
			if o.FieldSelector == nil || o.FieldSelector.String() != want {
				t.Errorf("storage asked with field selector %v, want %s", o.FieldSelector, want)
			}
		}
	}
	obj, exists, err := informers[accounts].Get("team-a", "ns", "default")
	if err != nil || !exists {
		t.Fatalf("listed service account: exists %v, %v", exists, err)
	}
	if _, ok := obj.(*corev1.ServiceAccount); !ok {
		t.Fatalf("listed %T, want *v1.ServiceAccount", obj)
	}

	// A field the kind does not offer is refused, as the API server does.
	lw := storage.core("secrets", &corev1.Secret{}, fields.OneTermEqualSelector("spec.nothing", "x"))
	if _, err := lw.(cache.ListerWatcherWithContext).ListWithContext(ctx, metav1.ListOptions{}); !apierrors.IsBadRequest(err) {
		t.Fatalf("list by an unknown field: %v, want a bad request", err)
	}
}
