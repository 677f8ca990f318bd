package replication

import (
	"context"
	"fmt"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func TestReplicaReconcilerWritesWhatDiffers(t *testing.T) {
	role := func(uid types.UID, verb string, marked bool) *rbacv1.ClusterRole {
		r := newRole("r", uid, "")
		r.Rules[0].Verbs = []string{verb}
		if marked {
			r.Annotations = map[string]string{ReplicateAnnotationKey: apisGroup}
		}
		r.Annotations = mergeStrings(r.Annotations, map[string]string{logicalcluster.AnnotationKey: "c1"})
		return r
	}
	replicaOf := func(r *rbacv1.ClusterRole) *unstructured.Unstructured {
		u, err := newReplica(r, roleKind, "s1", "c1")
		if err != nil {
			t.Fatal(err)
		}
		u.SetResourceVersion("5")
		return u
	}
	now := metav1.Now()
	deleting := role("u1", "bind", true)
	deleting.DeletionTimestamp = &now
	deleting.Finalizers = []string{"f"}

	for _, tc := range []struct {
		name    string
		cluster logicalcluster.Name
		local   *rbacv1.ClusterRole
		replica *unstructured.Unstructured
		// deleteErr is what deleting the replica answers.
		deleteErr error
		want      []string
	}{
		{name: "nothing anywhere", cluster: "c1"},
		{name: "new object", cluster: "c1", local: role("u1", "bind", true), want: []string{"create u1"}},
		{name: "up to date", cluster: "c1", local: role("u1", "bind", true), replica: replicaOf(role("u1", "bind", true))},
		{name: "changed", cluster: "c1", local: role("u1", "use", true), replica: replicaOf(role("u1", "bind", true)), want: []string{"update u1 rv 5"}},
		{name: "deleted", cluster: "c1", replica: replicaOf(role("u1", "bind", true)), want: []string{"delete u1"}},
		{name: "replica already gone", cluster: "c1", replica: replicaOf(role("u1", "bind", true)), deleteErr: apierrors.NewNotFound(roleKind.Resource.GroupResource(), "r"), want: []string{"delete u1"}},
		{name: "being deleted", cluster: "c1", local: deleting, replica: replicaOf(role("u1", "bind", true)), want: []string{"delete u1"}},
		{name: "no longer selected", cluster: "c1", local: role("u1", "bind", false), replica: replicaOf(role("u1", "bind", true)), want: []string{"delete u1"}},
		{name: "never selected", cluster: "c1", local: role("u1", "bind", false)},
		{name: "re-created", cluster: "c1", local: role("u2", "bind", true), replica: replicaOf(role("u1", "bind", true)), want: []string{"delete u1", "create u2"}},
		{name: "system cluster", cluster: "system:admin", local: role("u1", "bind", true)},
		{name: "stray replica of a system cluster", cluster: "system:admin", local: role("u1", "bind", true), replica: replicaOf(role("u1", "bind", true)), want: []string{"delete u1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			r := &replicaReconciler{
				shard: "s1", kind: roleKind,
				getLocal: func(cluster logicalcluster.Name, namespace, name string) (interface{}, bool, error) {
					return tc.local, tc.local != nil, nil
				},
				replicated: replicated(MarkedForReplication),
				getReplica: func(cluster logicalcluster.Name, namespace, name string) (*unstructured.Unstructured, bool, error) {
					return tc.replica, tc.replica != nil, nil
				},
				create: func(_ context.Context, cluster logicalcluster.Name, obj *unstructured.Unstructured) error {
					if obj.GetResourceVersion() != "" || obj.GetAnnotations()["kcp.io/shard"] != "s1" {
						return fmt.Errorf("create of %v", obj.Object)
					}
					got = append(got, "create "+string(obj.GetUID()))
					return nil
				},
				update: func(_ context.Context, cluster logicalcluster.Name, obj *unstructured.Unstructured) error {
					got = append(got, "update "+string(obj.GetUID())+" rv "+obj.GetResourceVersion())
					return nil
				},
				delete: func(_ context.Context, cluster logicalcluster.Name, namespace, name string, uid types.UID) error {
					got = append(got, "delete "+string(uid))
					return tc.deleteErr
				},
			}
			if err := r.reconcile(context.Background(), tc.cluster, "", "r"); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("wrote %v, want %v", got, tc.want)
			}
		})
	}
}

func mergeStrings(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
