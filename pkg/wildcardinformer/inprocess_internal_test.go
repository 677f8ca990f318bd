package wildcardinformer

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install" // core in legacyscheme
)

// internalSecrets stands for the REST storage of a Kubernetes kind, which
// holds the internal type.
type internalSecrets struct {
	mu       sync.Mutex
	cached   []*core.Secret
	opts     []*metainternalversion.ListOptions
	watchers []*watch.FakeWatcher
}

func (s *internalSecrets) NewList() runtime.Object { return &core.SecretList{} }

func (s *internalSecrets) ConvertToTable(context.Context, runtime.Object, runtime.Object) (*metav1.Table, error) {
	return nil, errors.New("not implemented")
}

func (s *internalSecrets) List(_ context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts = append(s.opts, opts)
	list := &core.SecretList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}}
	for _, o := range s.cached {
		list.Items = append(list.Items, *o)
	}
	return list, nil
}

func (s *internalSecrets) Watch(_ context.Context, opts *metainternalversion.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts = append(s.opts, opts)
	w := watch.NewFakeWithChanSize(10, false)
	s.watchers = append(s.watchers, w)
	return w, nil
}

func internalSecretsLW(s *internalSecrets) cache.ListerWatcherWithContext {
	secrets := corev1.SchemeGroupVersion.WithResource("secrets")
	return InProcessInternal(secrets, corev1.SchemeGroupVersion.WithKind("Secret"), legacyscheme.Scheme,
		func() Storage { return s }, func(ctx context.Context, _ string) context.Context { return ctx }).(cache.ListerWatcherWithContext)
}

func TestInProcessInternalConvertsListedItemsSharingTheirValues(t *testing.T) {
	cached := &core.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "token", ResourceVersion: "7", Labels: map[string]string{"a": "b"}},
		Type: core.SecretTypeServiceAccountToken, Data: map[string][]byte{"token": []byte("t")}}
	lw := internalSecretsLW(&internalSecrets{cached: []*core.Secret{cached}})
	obj, err := lw.ListWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list, ok := obj.(*corev1.SecretList)
	if !ok {
		t.Fatalf("listed %T, want *v1.SecretList", obj)
	}
	if list.ResourceVersion != "7" || len(list.Items) != 1 {
		t.Fatalf("listed %+v, want the storage's secret at resource version 7", list)
	}
	got := list.Items[0]
	if got.Name != "token" || got.Type != corev1.SecretTypeServiceAccountToken || string(got.Data["token"]) != "t" {
		t.Fatalf("listed %+v, want the storage's secret", got)
	}
	// The conversion copies no maps: they are the cached object's.
	if reflect.ValueOf(got.Data).Pointer() != reflect.ValueOf(cached.Data).Pointer() ||
		reflect.ValueOf(got.Labels).Pointer() != reflect.ValueOf(cached.Labels).Pointer() {
		t.Fatal("the listed secret's maps are copies, want the cached ones")
	}
}

func TestInProcessInternalConvertsWatchedObjects(t *testing.T) {
	s := &internalSecrets{}
	lw := internalSecretsLW(s)
	w, err := lw.WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "7"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	s.mu.Lock()
	fake := s.watchers[0]
	s.mu.Unlock()

	fake.Add(cacheable{&core.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "token", ResourceVersion: "8"}, Type: core.SecretTypeOpaque}})
	e := <-w.ResultChan()
	if s, ok := e.Object.(*corev1.Secret); e.Type != watch.Added || !ok || s.Name != "token" || s.Type != corev1.SecretTypeOpaque {
		t.Fatalf("event %s %#v, want the added secret as v1", e.Type, e.Object)
	}
	fake.Action(watch.Bookmark, &core.Secret{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "9"}})
	if e := <-w.ResultChan(); e.Type != watch.Bookmark || e.Object.(*corev1.Secret).ResourceVersion != "9" {
		t.Fatalf("event %s %#v, want a bookmark at 9 as v1", e.Type, e.Object)
	}
	gone := &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired}
	fake.Error(gone)
	if e := <-w.ResultChan(); e.Type != watch.Error || e.Object != gone {
		t.Fatalf("event %s %#v, want the storage's error as is", e.Type, e.Object)
	}
}

func TestInProcessInternalSelectsByTheKindsFields(t *testing.T) {
	s := &internalSecrets{}
	lw := internalSecretsLW(s)
	if _, err := lw.ListWithContext(context.Background(), metav1.ListOptions{FieldSelector: "type=kubernetes.io/service-account-token,metadata.name=x"}); err != nil {
		t.Fatal(err)
	}
	if got := s.opts[0].FieldSelector.String(); got != "metadata.name=x,type=kubernetes.io/service-account-token" && got != "type=kubernetes.io/service-account-token,metadata.name=x" {
		t.Fatalf("storage listed by %q, want the type and the name", got)
	}
	_, err := lw.ListWithContext(context.Background(), metav1.ListOptions{FieldSelector: "spec.nothing=x"})
	if !apierrors.IsBadRequest(err) {
		t.Fatalf("list by a field secrets do not have: %v, want a bad request", err)
	}
	if len(s.opts) != 1 {
		t.Fatal("the storage was asked for a field secrets do not have")
	}
}
