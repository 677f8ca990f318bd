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
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
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

// New returns the RBAC authorizer and rule resolver over the informers. Call
// it before the informers run: it registers a handler on ClusterRoleBindings.
func New(i Informers) *rbac.RBACAuthorizer {
	g := getters{Informers: i, bootstrap: &bootstrapBindings{informer: i.ClusterRoleBindings}}
	i.ClusterRoleBindings.AddHandler(g.bootstrap)
	return rbac.New(g, g, g, g)
}

type getters struct {
	Informers
	bootstrap *bootstrapBindings
}

// bootstrapBindings caches the ClusterRoleBindings of BootstrapCluster. They
// apply in every cluster, so every authorization lists them (twice for a
// request into a workspace: entering it, then the request), and they change
// only when the bootstrap policy does. Callers share the cached slice and
// only read it.
type bootstrapBindings struct {
	informer *wildcardinformer.Informer

	mu sync.Mutex
	// generation counts invalidations, so that a list read before a change
	// is never cached after it.
	generation uint64
	bindings   []*rbacv1.ClusterRoleBinding
	valid      bool
}

func (b *bootstrapBindings) list() ([]*rbacv1.ClusterRoleBinding, error) {
	b.mu.Lock()
	if b.valid {
		defer b.mu.Unlock()
		return b.bindings, nil
	}
	generation := b.generation
	b.mu.Unlock()
	bindings, err := listClusterRoleBindings(b.informer, BootstrapCluster)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	if b.generation == generation {
		b.bindings, b.valid = bindings, true
	}
	b.mu.Unlock()
	return bindings, nil
}

// changed invalidates the cache when obj is a binding of BootstrapCluster
// (or cannot be told apart from one).
func (b *bootstrapBindings) changed(obj interface{}) {
	if m, err := meta.Accessor(obj); err == nil {
		if c, ok := logicalcluster.ObjectCluster(m.GetAnnotations()); ok && c != BootstrapCluster {
			return
		}
	}
	b.mu.Lock()
	b.generation++
	b.bindings, b.valid = nil, false
	b.mu.Unlock()
}

func (b *bootstrapBindings) OnAdd(obj interface{})       { b.changed(obj) }
func (b *bootstrapBindings) OnUpdate(_, obj interface{}) { b.changed(obj) }
func (b *bootstrapBindings) OnDelete(obj interface{})    { b.changed(obj) }
func (b *bootstrapBindings) OnReplace()                  { b.changed(nil) }

func listClusterRoleBindings(informer *wildcardinformer.Informer, cluster logicalcluster.Name) ([]*rbacv1.ClusterRoleBinding, error) {
	objs, err := informer.List(cluster, "")
	if err != nil {
		return nil, err
	}
	out := make([]*rbacv1.ClusterRoleBinding, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*rbacv1.ClusterRoleBinding))
	}
	return out, nil
}

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
	bootstrap, err := g.bootstrap.list()
	if err != nil {
		return nil, err
	}
	var own []interface{}
	if cluster != BootstrapCluster {
		if own, err = g.ClusterRoleBindings.List(cluster, ""); err != nil {
			return nil, err
		}
	}
	var global []interface{}
	if g.GlobalClusterRoleBindings != nil && g.global(cluster) {
		if global, err = g.GlobalClusterRoleBindings.List(cluster, ""); err != nil {
			return nil, err
		}
	}
	// The cluster's own bindings first: they decide most requests, and the
	// authorizer stops at the first rule that allows.
	out := make([]*rbacv1.ClusterRoleBinding, 0, len(own)+len(bootstrap)+len(global))
	for _, o := range own {
		out = append(out, o.(*rbacv1.ClusterRoleBinding))
	}
	out = append(out, bootstrap...)
	for _, o := range global {
		out = append(out, o.(*rbacv1.ClusterRoleBinding))
	}
	return out, nil
}
