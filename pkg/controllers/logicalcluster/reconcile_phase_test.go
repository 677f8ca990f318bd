package logicalcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	corev1alpha1 "github.com/kplane-dev/kplane/pkg/apis/core/v1alpha1"
	"github.com/kplane-dev/kplane/pkg/logicalcluster"
)

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
	c := &Controller{}
	c.BootstrapInProcess(r.createObjects, namespaceObjects)
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
	c := &Controller{}
	c.BootstrapInProcess(r.createObjects, namespaceObjects)
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
