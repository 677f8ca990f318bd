package loopback

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

var configMaps = corev1.SchemeGroupVersion.WithResource("configmaps")

func TestWithRequestSetsClusterRequestInfoAndUser(t *testing.T) {
	ctx := WithRequest(context.Background(), "c1", "update", corev1.SchemeGroupVersion.WithResource("namespaces/finalize"), "", "ns", ShardUser)
	if cluster, _ := logicalcluster.ClusterFromContext(ctx); cluster != "c1" {
		t.Errorf("cluster %q, want c1", cluster)
	}
	info, ok := genericapirequest.RequestInfoFrom(ctx)
	if !ok || info.Verb != "update" || info.Resource != "namespaces" || info.Subresource != "finalize" || info.Name != "ns" || info.APIVersion != "v1" {
		t.Errorf("request info %+v, want an update of namespaces/finalize ns", info)
	}
	if u, ok := genericapirequest.UserFrom(ctx); !ok || u.GetName() != ShardUser.GetName() {
		t.Errorf("user %v, want the shard", u)
	}
}

// configMapStorage keeps config maps by cluster and name and records the
// context of every call.
type configMapStorage struct {
	mu      sync.Mutex
	objects map[string]*corev1.ConfigMap
	calls   []*genericapirequest.RequestInfo
}

func (s *configMapStorage) New() runtime.Object { return &corev1.ConfigMap{} }
func (s *configMapStorage) Destroy()            {}

func (s *configMapStorage) key(ctx context.Context, name string) string {
	s.calls = append(s.calls, func() *genericapirequest.RequestInfo { i, _ := genericapirequest.RequestInfoFrom(ctx); return i }())
	cluster, _ := logicalcluster.ClusterFromContext(ctx)
	return string(cluster) + "/" + genericapirequest.NamespaceValue(ctx) + "/" + name
}

func (s *configMapStorage) Create(ctx context.Context, obj runtime.Object, _ rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cm := obj.(*corev1.ConfigMap)
	key := s.key(ctx, cm.Name)
	if _, ok := s.objects[key]; ok {
		return nil, apierrors.NewAlreadyExists(configMaps.GroupResource(), cm.Name)
	}
	s.objects[key] = cm
	return cm, nil
}

func (s *configMapStorage) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cm, ok := s.objects[s.key(ctx, name)]
	if !ok {
		return nil, apierrors.NewNotFound(configMaps.GroupResource(), name)
	}
	return cm, nil
}

func (s *configMapStorage) Update(ctx context.Context, name string, info rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc, _ rest.ValidateObjectUpdateFunc, _ bool, _ *metav1.UpdateOptions) (runtime.Object, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := s.key(ctx, name)
	obj, err := info.UpdatedObject(ctx, s.objects[key])
	if err != nil {
		return nil, false, err
	}
	s.objects[key] = obj.(*corev1.ConfigMap)
	return obj, false, nil
}

func (s *configMapStorage) Delete(ctx context.Context, name string, _ rest.ValidateObjectFunc, _ *metav1.DeleteOptions) (runtime.Object, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := s.key(ctx, name)
	cm, ok := s.objects[key]
	if !ok {
		return nil, false, apierrors.NewNotFound(configMaps.GroupResource(), name)
	}
	delete(s.objects, key)
	return cm, true, nil
}

func newTestClient(t *testing.T) (*Client, *configMapStorage) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	storage := &configMapStorage{objects: map[string]*corev1.ConfigMap{}}
	groups := []*genericapiserver.APIGroupInfo{{
		PrioritizedVersions:          []schema.GroupVersion{corev1.SchemeGroupVersion},
		VersionedResourcesStorageMap: map[string]map[string]rest.Storage{"v1": {"configmaps": storage}},
	}}
	return NewClient(scheme, groups), storage
}

func TestClientCreatesGetsUpdatesAndDeletesInTheGivenCluster(t *testing.T) {
	client, storage := newTestClient(t)
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}}
	if err := client.Create(ctx, "c1", cm); err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := client.Create(ctx, "c1", cm); err != nil {
		t.Fatalf("create of an existing object: %v, want it left alone", err)
	}
	if exists, err := client.Exists(ctx, "c2", configMaps, "default", "a"); err != nil || exists {
		t.Fatalf("exists in another cluster: %v, %v; want false", exists, err)
	}
	updated := cm.DeepCopy()
	updated.Data = map[string]string{"k": "v"}
	if obj, err := client.Update(ctx, "c1", configMaps, updated); err != nil || obj.(*corev1.ConfigMap).Data["k"] != "v" {
		t.Fatalf("update: %v, %v", obj, err)
	}
	obj, err := client.Get(ctx, "c1", configMaps, "default", "a")
	if err != nil || obj.(*corev1.ConfigMap).Data["k"] != "v" {
		t.Fatalf("get: %v, %v; want the update", obj, err)
	}
	if err := client.Delete(ctx, "c1", configMaps, "default", "a"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if exists, err := client.Exists(ctx, "c1", configMaps, "default", "a"); err != nil || exists {
		t.Fatalf("exists after delete: %v, %v; want false", exists, err)
	}
	want := []string{"create", "create", "get", "update", "get", "delete", "get"}
	if len(storage.calls) != len(want) {
		t.Fatalf("%d calls, want %d", len(storage.calls), len(want))
	}
	for i, info := range storage.calls {
		if info == nil || info.Verb != want[i] || info.Resource != "configmaps" || info.Namespace != "default" {
			t.Errorf("call %d: request info %+v, want %s of configmaps in default", i, info, want[i])
		}
	}
}

func TestClientRefusesKindsWithoutStorage(t *testing.T) {
	client, _ := newTestClient(t)
	if err := client.Create(context.Background(), "c1", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}); err == nil {
		t.Error("created a kind without storage")
	}
	if client.Storage(corev1.SchemeGroupVersion.WithResource("secrets")) != nil {
		t.Error("a storage of secrets")
	}
}
