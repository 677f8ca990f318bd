package replication

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func TestNewReplicaIsACleanCopyNamingItsOrigin(t *testing.T) {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{
			Name: "binder", UID: "uid-1", ResourceVersion: "42", Generation: 3,
			Annotations:   map[string]string{logicalcluster.AnnotationKey: "c1", "note": "x"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"apis.kcp.io"}, Resources: []string{"apiexports"}, Verbs: []string{"bind"}}},
	}
	u, err := newReplica(role, roleKind, "shard-1", "c1")
	if err != nil {
		t.Fatal(err)
	}
	if u.GetAPIVersion() != "rbac.authorization.k8s.io/v1" || u.GetKind() != "ClusterRole" {
		t.Errorf("apiVersion %q kind %q", u.GetAPIVersion(), u.GetKind())
	}
	if u.GetResourceVersion() != "" || u.GetManagedFields() != nil {
		t.Errorf("resourceVersion %q and managedFields %v kept", u.GetResourceVersion(), u.GetManagedFields())
	}
	if u.GetUID() != "uid-1" || u.GetGeneration() != 3 {
		t.Errorf("uid %q generation %d, want the object's", u.GetUID(), u.GetGeneration())
	}
	a := u.GetAnnotations()
	if a[cacheclient.ShardAnnotationKey] != "shard-1" || a[logicalcluster.AnnotationKey] != "c1" || a["note"] != "x" {
		t.Errorf("annotations %v", a)
	}
	if role.Annotations[cacheclient.ShardAnnotationKey] != "" || role.ResourceVersion != "42" {
		t.Errorf("the informer's object was changed: %+v", role.ObjectMeta)
	}
}

func TestReplicaUpToDateComparesContentNotBookkeeping(t *testing.T) {
	base := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "rbac.authorization.k8s.io/v1",
			"kind":       "ClusterRoleBinding",
			"metadata": map[string]interface{}{
				"name": "b", "uid": "u", "resourceVersion": "7", "generation": int64(1),
				"labels":      map[string]interface{}{"a": "1"},
				"annotations": map[string]interface{}{"x": "y", cacheclient.ShardAnnotationKey: "s1", logicalcluster.AnnotationKey: "c1"},
			},
			"roleRef":  map[string]interface{}{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "r"},
			"subjects": []interface{}{map[string]interface{}{"kind": "User", "name": "alice"}},
			"spec":     map[string]interface{}{"replicas": int64(2), "ratio": 0.5},
		}}
	}
	for _, tc := range []struct {
		name   string
		change func(have *unstructured.Unstructured)
		equal  bool
	}{
		{"identical", func(*unstructured.Unstructured) {}, true},
		{"resourceVersion", func(h *unstructured.Unstructured) { h.SetResourceVersion("99") }, true},
		{"generation", func(h *unstructured.Unstructured) { h.SetGeneration(5) }, true},
		{"managedFields", func(h *unstructured.Unstructured) {
			h.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "cache"}})
		}, true},
		{"creationTimestamp", func(h *unstructured.Unstructured) { h.SetCreationTimestamp(metav1.Now()) }, true},
		{"origin annotations missing", func(h *unstructured.Unstructured) { h.SetAnnotations(map[string]string{"x": "y"}) }, true},
		{"origin annotations differ", func(h *unstructured.Unstructured) {
			h.SetAnnotations(map[string]string{"x": "y", cacheclient.ShardAnnotationKey: "other", logicalcluster.AnnotationKey: "c9"})
		}, true},
		{"integer read back as float", func(h *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(h.Object, float64(2), "spec", "replicas")
		}, true},
		{"null field", func(h *unstructured.Unstructured) { h.Object["status"] = nil }, true},
		{"label changed", func(h *unstructured.Unstructured) { h.SetLabels(map[string]string{"a": "2"}) }, false},
		{"label removed", func(h *unstructured.Unstructured) { h.SetLabels(nil) }, false},
		{"annotation changed", func(h *unstructured.Unstructured) {
			h.SetAnnotations(map[string]string{"x": "z", cacheclient.ShardAnnotationKey: "s1", logicalcluster.AnnotationKey: "c1"})
		}, false},
		{"annotation added", func(h *unstructured.Unstructured) {
			h.SetAnnotations(map[string]string{"x": "y", "new": "1", cacheclient.ShardAnnotationKey: "s1", logicalcluster.AnnotationKey: "c1"})
		}, false},
		{"spec changed", func(h *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(h.Object, int64(3), "spec", "replicas")
		}, false},
		{"spec field added", func(h *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(h.Object, "x", "spec", "extra")
		}, false},
		{"roleRef changed", func(h *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(h.Object, "other", "roleRef", "name")
		}, false},
		{"subjects changed", func(h *unstructured.Unstructured) { h.Object["subjects"] = []interface{}{} }, false},
		{"status added", func(h *unstructured.Unstructured) {
			h.Object["status"] = map[string]interface{}{"phase": "Ready"}
		}, false},
		{"top-level field removed", func(h *unstructured.Unstructured) { delete(h.Object, "roleRef") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			have := base()
			tc.change(have)
			if got := replicaUpToDate(base(), have); got != tc.equal {
				t.Errorf("replicaUpToDate = %v, want %v", got, tc.equal)
			}
		})
	}
}

func TestEqualJSON(t *testing.T) {
	for _, tc := range []struct {
		a, b  interface{}
		equal bool
	}{
		{nil, nil, true},
		{nil, map[string]interface{}(nil), true},
		{nil, []interface{}(nil), true},
		{nil, map[string]interface{}{}, false},
		{nil, "", false},
		{int64(1), float64(1), true},
		{int64(1), int64(2), false},
		{int64(1), "1", false},
		{true, true, true},
		{map[string]interface{}{"a": nil}, map[string]interface{}{}, true},
		{map[string]interface{}{"a": int64(1)}, map[string]interface{}{}, false},
		{[]interface{}{"a", "b"}, []interface{}{"a", "b"}, true},
		{[]interface{}{"a", "b"}, []interface{}{"b", "a"}, false},
		{[]interface{}{}, []interface{}{nil}, false},
	} {
		if got := equalJSON(tc.a, tc.b); got != tc.equal {
			t.Errorf("equalJSON(%#v, %#v) = %v, want %v", tc.a, tc.b, got, tc.equal)
		}
		if got := equalJSON(tc.b, tc.a); got != tc.equal {
			t.Errorf("equalJSON(%#v, %#v) = %v, want %v", tc.b, tc.a, got, tc.equal)
		}
	}
}
