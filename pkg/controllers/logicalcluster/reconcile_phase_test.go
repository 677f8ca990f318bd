package logicalcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// fakeInProcess is an InProcess of plain functions.
type fakeInProcess struct {
	create func(ctx context.Context, cluster logicalcluster.Name, objs ...runtime.Object) error
	update func(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) (*corev1alpha1.LogicalCluster, error)
}

func (f fakeInProcess) Create(ctx context.Context, cluster logicalcluster.Name, objs ...runtime.Object) error {
	return f.create(ctx, cluster, objs...)
}

func (f fakeInProcess) Update(ctx context.Context, cluster logicalcluster.Name, _ schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error) {
	return f.update(ctx, cluster, obj.(*corev1alpha1.LogicalCluster))
}

// bootstrapRecorder records what a cluster's in-process bootstrap creates,
// in order.
type bootstrapRecorder struct {
	mu        sync.Mutex
	created   []string
	failFirst error
}

func (r *bootstrapRecorder) createObjects(_ context.Context, cluster logicalcluster.Name, objs ...runtime.Object) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failFirst != nil {
		return r.failFirst
	}
	for _, obj := range objs {
		m, _ := meta.Accessor(obj)
		r.created = append(r.created, fmt.Sprintf("%s|%T %s/%s", cluster, obj, m.GetNamespace(), m.GetName()))
	}
	return nil
}

func namespaceObjects(ns string) []runtime.Object {
	return []runtime.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kube-root-ca.crt"}},
	}
}

// TestBootstrapCreatesNamespaceObjectsAndOwnerBindingBeforeTheNamespaces:
// in-process, a new cluster's bootstrap creates each namespace's service
// account and root CA config map and the owner's binding first, then the
// namespaces, so that the service account controller finds the objects of
// a new namespace in place.
func TestBootstrapCreatesNamespaceObjectsAndOwnerBindingBeforeTheNamespaces(t *testing.T) {
	r := &bootstrapRecorder{}
	c := &Controller{deletion: &deletionReconciler{}}
	c.useInProcess(fakeInProcess{create: r.createObjects}, namespaceObjects)
	lc := &corev1alpha1.LogicalCluster{ObjectMeta: metav1.ObjectMeta{Name: corev1alpha1.LogicalClusterName, Annotations: map[string]string{
		corev1alpha1.ExperimentalWorkspaceOwnerAnnotationKey: `{"username":"alice"}`,
	}}}
	if err := c.bootstrapContent(context.Background(), "c1", lc); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"c1|*v1.ServiceAccount default/default",
		"c1|*v1.ConfigMap default/kube-root-ca.crt",
		"c1|*v1.ServiceAccount kube-system/default",
		"c1|*v1.ConfigMap kube-system/kube-root-ca.crt",
		"c1|*v1.ClusterRoleBinding /" + OwnerBindingName,
		"c1|*v1.Namespace /default",
		"c1|*v1.Namespace /kube-system",
	}
	if !slices.Equal(r.created, want) {
		t.Errorf("created\n%q\nwant\n%q", r.created, want)
	}
}

// TestBootstrapCreatesNoNamespaceWhoseObjectsFailed: the namespaces come
// only after their objects; a failure is retried by the next reconcile.
func TestBootstrapCreatesNoNamespaceWhoseObjectsFailed(t *testing.T) {
	r := &bootstrapRecorder{failFirst: errors.New("etcd unavailable")}
	c := &Controller{deletion: &deletionReconciler{}}
	c.useInProcess(fakeInProcess{create: r.createObjects}, namespaceObjects)
	lc := &corev1alpha1.LogicalCluster{ObjectMeta: metav1.ObjectMeta{Name: corev1alpha1.LogicalClusterName}}
	if err := c.bootstrapContent(context.Background(), "c1", lc); err == nil {
		t.Fatal("no error from a failed create")
	}
	if len(r.created) != 0 {
		t.Errorf("created %q after a failure", r.created)
	}
}

func TestInProcessObjectsWithoutAKnownOwnerHaveNoBinding(t *testing.T) {
	objs := inProcessObjects(nil, namespaceObjects)
	if len(objs) != 2*len(Namespaces) {
		t.Fatalf("%d objects, want %d", len(objs), 2*len(Namespaces))
	}
	for _, obj := range objs {
		if _, ok := obj.(*rbacv1.ClusterRoleBinding); ok {
			t.Errorf("a binding without an owner: %v", obj)
		}
	}
}

// statusWrites records the status writes of a LogicalCluster: in-process
// ones, and PUTs through the loopback client (served by an httptest
// server that stores what it is sent).
type statusWrites struct {
	mu                  sync.Mutex
	inProcess, overHTTP []corev1alpha1.LogicalClusterPhaseType
}

func (w *statusWrites) writeInProcess(_ context.Context, _ logicalcluster.Name, lc *corev1alpha1.LogicalCluster) (*corev1alpha1.LogicalCluster, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inProcess = append(w.inProcess, lc.Status.Phase)
	stored := lc.DeepCopy()
	stored.ResourceVersion = "11"
	return stored, nil
}

func (w *statusWrites) server(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		lc := &corev1alpha1.LogicalCluster{}
		if err := json.NewDecoder(r.Body).Decode(lc); err != nil || r.Method != http.MethodPut || !strings.HasSuffix(r.URL.Path, "/status") {
			http.Error(rw, fmt.Sprintf("unexpected %s %s: %v", r.Method, r.URL.Path, err), http.StatusBadRequest)
			return
		}
		w.mu.Lock()
		w.overHTTP = append(w.overHTTP, lc.Status.Phase)
		w.mu.Unlock()
		lc.ResourceVersion = "12"
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(lc)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestOnlyTheWriteThatEndsSchedulingGoesInProcess: the status write that
// moves a bootstrapped cluster out of Scheduling goes in-process (nobody
// but the system reaches the cluster before it); a later one, once
// initializers and users may act on the cluster, goes through the API with
// its admission and audit. Either way a reconcile of a copy older than the
// write is skipped.
func TestOnlyTheWriteThatEndsSchedulingGoesInProcess(t *testing.T) {
	w := &statusWrites{}
	client, err := kcpclient.New(&rest.Config{Host: w.server(t).URL})
	if err != nil {
		t.Fatal(err)
	}
	c := &Controller{kcp: client, deletion: &deletionReconciler{}}
	c.useInProcess(fakeInProcess{create: (&bootstrapRecorder{}).createObjects, update: w.writeInProcess}, namespaceObjects)
	key := wildcardinformer.Key("c1", "", corev1alpha1.LogicalClusterName)

	newCluster := func(phase corev1alpha1.LogicalClusterPhaseType, initializers ...corev1alpha1.LogicalClusterInitializer) *corev1alpha1.LogicalCluster {
		return &corev1alpha1.LogicalCluster{
			ObjectMeta: metav1.ObjectMeta{Name: corev1alpha1.LogicalClusterName, ResourceVersion: "10"},
			Status:     corev1alpha1.LogicalClusterStatus{Phase: phase, Initializers: initializers},
		}
	}
	if err := c.reconcilePhase(context.Background(), "c1", newCluster(corev1alpha1.LogicalClusterPhaseScheduling, "system:apibindings")); err != nil {
		t.Fatal(err)
	}
	if err := c.reconcilePhase(context.Background(), "c1", newCluster("")); err != nil {
		t.Fatal(err)
	}
	if want := []corev1alpha1.LogicalClusterPhaseType{corev1alpha1.LogicalClusterPhaseInitializing, corev1alpha1.LogicalClusterPhaseReady}; !slices.Equal(w.inProcess, want) {
		t.Errorf("in-process writes %q, want %q", w.inProcess, want)
	}
	if !c.written.Stale(key, "10") {
		t.Error("a copy older than the in-process write is not skipped")
	}
	if err := c.reconcilePhase(context.Background(), "c1", newCluster(corev1alpha1.LogicalClusterPhaseInitializing)); err != nil {
		t.Fatal(err)
	}
	if want := []corev1alpha1.LogicalClusterPhaseType{corev1alpha1.LogicalClusterPhaseReady}; !slices.Equal(w.overHTTP, want) {
		t.Errorf("writes through the API %q, want %q", w.overHTTP, want)
	}
	if len(w.inProcess) != 2 {
		t.Errorf("the write of an Initializing cluster went in-process: %q", w.inProcess)
	}
}
