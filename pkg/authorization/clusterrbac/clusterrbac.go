// Package clusterrbac authorizes with Kubernetes' RBAC authorizer against the
// roles and bindings of the request's own logical cluster.
//
// One authorizer serves all logical clusters: its role and binding getters
// read the cluster from the request context and look it up in wildcard
// informers. ClusterRoles not found in the cluster fall back to those of
// system:admin (the bootstrap roles: cluster-admin, admin, edit, view, ...),
// and the ClusterRoleBindings of system:admin (bootstrap bindings such as
// system:discovery for system:authenticated) apply in every cluster.
// ClusterRoles and ClusterRoleBindings of logical clusters other shards host
// (root's, on a shard without root) come from global informers.
package clusterrbac

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac"

	"github.com/kplane-dev/kplane/pkg/logicalcluster"
	"github.com/kplane-dev/kplane/pkg/wildcardinformer"
)

// BootstrapCluster holds the bootstrap policy that applies everywhere.
const BootstrapCluster = logicalcluster.SystemAdmin

// Informers are the wildcard informers the authorizer reads.
type Informers struct {
	Roles               *wildcardinformer.Informer
	RoleBindings        *wildcardinformer.Informer
	ClusterRoles        *wildcardinformer.Informer
	ClusterRoleBindings *wildcardinformer.Informer
	// GlobalClusterRoles and GlobalClusterRoleBindings hold those of
	// logical clusters other shards host (kcp's replicated RBAC); nil when
	// there are none. They are read only for clusters Hosted says this
	// shard does not host: a hosted cluster's RBAC is its own, never a
	// replica that may be stale.
	GlobalClusterRoles, GlobalClusterRoleBindings *wildcardinformer.Informer
	// Hosted tells whether this shard hosts a logical cluster; nil: all.
	Hosted func(logicalcluster.Name) bool
}

// global tells whether the replicated RBAC of cluster counts.
func (i Informers) global(cluster logicalcluster.Name) bool {
	return i.Hosted != nil && !i.Hosted(cluster)
}

// HasSynced tells whether all informers have listed once.
func (i Informers) HasSynced() bool {
	return i.Roles.HasSynced() && i.RoleBindings.HasSynced() && i.ClusterRoles.HasSynced() && i.ClusterRoleBindings.HasSynced()
}

// New returns the RBAC authorizer and rule resolver over the informers.
func New(i Informers) *rbac.RBACAuthorizer {
	g := getters{i}
	return rbac.New(g, g, g, g)
}

type getters struct{ Informers }

func clusterOf(ctx context.Context) logicalcluster.Name {
	c, _ := logicalcluster.ClusterFromContext(ctx)
	return c
}

func (g getters) GetRole(ctx context.Context, namespace, name string) (*rbacv1.Role, error) {
	obj, exists, err := g.Roles.Get(clusterOf(ctx), namespace, name)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, apierrors.NewNotFound(rbacv1.Resource("roles"), name)
	}
	return obj.(*rbacv1.Role), nil
}

func (g getters) ListRoleBindings(ctx context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	objs, err := g.RoleBindings.List(clusterOf(ctx), namespace)
	if err != nil {
		return nil, err
	}
	out := make([]*rbacv1.RoleBinding, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*rbacv1.RoleBinding))
	}
	return out, nil
}

func (g getters) GetClusterRole(ctx context.Context, name string) (*rbacv1.ClusterRole, error) {
	cluster := clusterOf(ctx)
	for _, source := range []struct {
		cluster  logicalcluster.Name
		informer *wildcardinformer.Informer
	}{{cluster, g.ClusterRoles}, {cluster, g.GlobalClusterRoles}, {BootstrapCluster, g.ClusterRoles}} {
		if source.informer == nil || (source.informer == g.GlobalClusterRoles && !g.global(cluster)) {
			continue
		}
		obj, exists, err := source.informer.Get(source.cluster, "", name)
		if err != nil {
			return nil, err
		}
		if exists {
			return obj.(*rbacv1.ClusterRole), nil
		}
	}
	return nil, apierrors.NewNotFound(rbacv1.Resource("clusterroles"), name)
}

func (g getters) ListClusterRoleBindings(ctx context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	cluster := clusterOf(ctx)
	clusters := []logicalcluster.Name{cluster}
	if cluster != BootstrapCluster {
		clusters = append(clusters, BootstrapCluster)
	}
	var out []*rbacv1.ClusterRoleBinding
	for _, c := range clusters {
		objs, err := g.ClusterRoleBindings.List(c, "")
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			out = append(out, o.(*rbacv1.ClusterRoleBinding))
		}
	}
	if g.GlobalClusterRoleBindings != nil && g.global(cluster) {
		objs, err := g.GlobalClusterRoleBindings.List(cluster, "")
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			out = append(out, o.(*rbacv1.ClusterRoleBinding))
		}
	}
	return out, nil
}
