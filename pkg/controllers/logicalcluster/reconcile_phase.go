package logicalcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// OwnerBindingName is the ClusterRoleBinding that makes a workspace's
// creator its cluster-admin.
const OwnerBindingName = "workspace-admin"

// reconcilePhase bootstraps a scheduled cluster and moves it to Initializing
// or Ready.
func (c *Controller) reconcilePhase(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) error {
	// The finalizer first: the status write below would conflict with it.
	if !scheduling(lc) && markTerminators(lc) {
		return c.update(ctx, cluster, lc)
	}
	want := lc.Status.Phase
	terminators := false
	bootstrapped := false
	switch lc.Status.Phase {
	case "", corev1alpha1.LogicalClusterPhaseScheduling:
		if err := c.bootstrapContent(ctx, cluster, lc); err != nil {
			return err
		}
		terminators = startTerminators(lc)
		bootstrapped = true
		want = corev1alpha1.LogicalClusterPhaseInitializing
		if len(lc.Status.Initializers) == 0 {
			want = corev1alpha1.LogicalClusterPhaseReady
		}
	case corev1alpha1.LogicalClusterPhaseInitializing:
		if len(lc.Status.Initializers) == 0 {
			want = corev1alpha1.LogicalClusterPhaseReady
		}
	}
	url := lc.Status.URL
	if c.externalURL != "" {
		path := lc.Annotations[logicalcluster.PathAnnotationKey]
		if path == "" {
			path = string(cluster)
		}
		url = logicalcluster.Path(path).URL(c.externalURL)
	}
	if want == lc.Status.Phase && url == lc.Status.URL && !terminators {
		return nil
	}
	lc.Status.Phase, lc.Status.URL = want, url
	if bootstrapped {
		return c.updateBootstrapStatus(ctx, cluster, lc)
	}
	return c.updateStatus(ctx, cluster, lc)
}

// Namespaces are the namespaces every new workspace has, as in kcp.
var Namespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem}

// bootstrapContent creates what every new workspace has: the namespaces
// default and kube-system and, when the creator is known, a binding of the
// creator to cluster-admin. The objects do not depend on each other: they
// are created at once. With Config.InProcess they are created in-process
// (no HTTP round trip, TLS or encoding for objects no admission plugin of a
// new cluster has a say on; watchers see them as any other), and so are the
// namespaces' service accounts and root CA config maps, before the
// namespaces: the service account controller, woken by a new namespace,
// finds its objects in place instead of creating them over HTTP.
func (c *Controller) bootstrapContent(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) error {
	binding := ownerBinding(lc)
	if c.createObjects != nil && c.namespaceObjects != nil {
		if err := c.createObjects(ctx, cluster, inProcessObjects(binding, c.namespaceObjects)...); err != nil {
			return err
		}
		return c.createObjects(ctx, cluster, NamespaceObjects(Namespaces...)...)
	}
	client, err := c.clusterClient(cluster)
	if err != nil {
		return err
	}
	var creates []func() error
	for _, ns := range NamespaceObjects(Namespaces...) {
		creates = append(creates, func() error {
			_, err := client.CoreV1().Namespaces().Create(ctx, ns.(*corev1.Namespace), metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create namespace %s: %w", ns.(*corev1.Namespace).Name, err)
			}
			return nil
		})
	}
	if binding != nil {
		creates = append(creates, func() error {
			_, err := client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("bind owner %q as cluster-admin: %w", binding.Subjects[0].Name, err)
			}
			return nil
		})
	}
	return runAll(creates)
}

// NamespaceObjects returns new Namespaces of the given names.
func NamespaceObjects(names ...string) []runtime.Object {
	objs := make([]runtime.Object, 0, len(names))
	for _, name := range names {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	return objs
}

// inProcessObjects are the objects a new cluster's bootstrap creates
// in-process before its namespaces: each namespace's objects and the
// owner's binding (nil: none).
func inProcessObjects(binding *rbacv1.ClusterRoleBinding, namespaceObjects func(namespace string) []runtime.Object) []runtime.Object {
	var objs []runtime.Object
	for _, ns := range Namespaces {
		objs = append(objs, namespaceObjects(ns)...)
	}
	if binding != nil {
		objs = append(objs, binding)
	}
	return objs
}

// ownerBinding returns the binding of a cluster's creator to cluster-admin,
// nil when the creator is not known.
func ownerBinding(lc *corev1alpha1.LogicalCluster) *rbacv1.ClusterRoleBinding {
	raw := lc.Annotations[corev1alpha1.ExperimentalWorkspaceOwnerAnnotationKey]
	if raw == "" {
		return nil
	}
	var owner authenticationv1.UserInfo
	if err := json.Unmarshal([]byte(raw), &owner); err != nil || owner.Username == "" {
		return nil // not ours to fix; the workspace works without an owner binding
	}
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: OwnerBindingName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: owner.Username}},
	}
}

// runAll runs fns concurrently and returns their errors joined.
func runAll(fns []func() error) error {
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
