package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/shardplane/shardplane/test/framework"
)

// waitForEvent waits for an event of a reason about the object of uid in a
// namespace and returns it.
func waitForEvent(t *testing.T, c kubernetes.Interface, ns, reason string, uid types.UID) corev1.Event {
	t.Helper()
	var found corev1.Event
	framework.EventuallyWithin(t, gcTimeout, func(ctx context.Context) error {
		list, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, ev := range list.Items {
			if ev.Reason == reason && ev.InvolvedObject.UID == uid {
				found = ev
				return nil
			}
		}
		return fmt.Errorf("%d other events", len(list.Items))
	}, "no %s event about %s in namespace %q", reason, uid, ns)
	return found
}

// TestGarbageCollectorDeletesDependentNamingAnOwnerInAnotherNamespace: a
// tenant cannot hang an object on an owner in another namespace (to make it
// look owned, or to tie its life to someone else's object). As in
// kube-controller-manager, the reference is absent in the dependent's
// namespace: the dependent is collected and an OwnerRefInvalidNamespace
// warning says why. The real owner is untouched.
func TestGarbageCollectorDeletesDependentNamingAnOwnerInAnotherNamespace(t *testing.T) {
	t.Parallel()
	s := sharedShard(t)
	ctx := testContext(t)
	c := newKCCluster(ctx, t, s, "gc-xns")
	createNamespace(ctx, t, c.kube, "owners")
	createNamespace(ctx, t, c.kube, "squatters")

	owner := createOwned(ctx, t, c.kube, "owners", "owner", nil)
	dep := createOwned(ctx, t, c.kube, "squatters", "dependent", nil, ownerRef(owner, false))

	waitGone(t, "dependent naming an owner in another namespace", getConfigMap(c.kube, "squatters", "dependent"))
	ev := waitForEvent(t, c.kube, "squatters", "OwnerRefInvalidNamespace", dep.UID)
	if ev.Type != corev1.EventTypeWarning || !strings.Contains(ev.Message, `does not exist in namespace "squatters"`) ||
		ev.InvolvedObject.Kind != "ConfigMap" || ev.InvolvedObject.Name != "dependent" {
		t.Errorf("event: %s %q about %+v", ev.Type, ev.Message, ev.InvolvedObject)
	}
	requireStays(ctx, t, c.kube, owner, 0)

	// A dependent in the owner's own namespace is kept.
	fine := createOwned(ctx, t, c.kube, "owners", "dependent", nil, ownerRef(owner, false))
	requireStays(ctx, t, c.kube, fine, 2*time.Second)
}

// TestGarbageCollectorKeepsClusterScopedDependentOfNamespacedOwner: a
// cluster-scoped object cannot name a namespaced owner. Upstream neither
// collects nor retries it (the reference can never resolve) and records an
// OwnerRefInvalidNamespace warning in namespace default; so does the shard.
func TestGarbageCollectorKeepsClusterScopedDependentOfNamespacedOwner(t *testing.T) {
	t.Parallel()
	s := sharedShard(t)
	ctx := testContext(t)
	c := newKCCluster(ctx, t, s, "gc-cs")
	createNamespace(ctx, t, c.kube, "owners")
	waitForNamespace(t, c.kube, "default")
	owner := createOwned(ctx, t, c.kube, "owners", "owner", nil)

	role, err := c.kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{
		Name: "owned-by-a-configmap", OwnerReferences: []metav1.OwnerReference{ownerRef(owner, false)},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ev := waitForEvent(t, c.kube, "default", "OwnerRefInvalidNamespace", role.UID)
	if !strings.Contains(ev.Message, `does not exist in namespace ""`) || ev.InvolvedObject.Kind != "ClusterRole" {
		t.Errorf("event: %q about %+v", ev.Message, ev.InvolvedObject)
	}
	// Every such reference is warned about, also one to an owner that
	// never existed, as upstream documents it.
	nobody := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "nobody", UID: "00000000-0000-0000-0000-000000000001"}
	orphan, err := c.kube.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{
		Name: "owned-by-no-configmap", OwnerReferences: []metav1.OwnerReference{nobody},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitForEvent(t, c.kube, "default", "OwnerRefInvalidNamespace", orphan.UID)
	// Deleting the owner does not make the reference resolvable either.
	deleteConfigMap(ctx, t, c.kube, owner, metav1.DeletePropagationBackground)
	waitGone(t, "owner", getConfigMap(c.kube, "owners", "owner"))
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		got, err := c.kube.RbacV1().ClusterRoles().Get(ctx, role.Name, metav1.GetOptions{})
		if err != nil || got.UID != role.UID {
			t.Fatalf("cluster-scoped dependent of a namespaced owner was collected: %v", err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}
