// Package clusterrbac authorizes with Kubernetes' RBAC authorizer in kcp's
// three steps, the first that allows deciding (RBAC never denies):
//
//   - bootstrap: the RBAC of system:admin (the bootstrap policy: the roles
//     cluster-admin, admin, edit, view, ... and bindings such as
//     system:discovery for system:authenticated), in every cluster;
//   - local: the roles and bindings of the request's own logical cluster,
//     its ClusterRoles falling back to those of system:admin;
//   - global: the replicated ClusterRoles and ClusterRoleBindings of a
//     logical cluster another shard hosts (root's, on a shard without
//     root), read from global informers.
//
// Each step reads the cluster from the request context and looks it up in
// wildcard informers, so one authorizer serves all logical clusters.
package clusterrbac

import (
	"context"
	"fmt"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
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

// Authorizer is kcp's three RBAC steps; it authorizes and resolves rules
// with all of them, and Steps gives each on its own (for the audit
// annotations of kcp's 05-bootstrap, 05-local and 05-global).
type Authorizer struct {
	bootstrap, local, global *rbac.RBACAuthorizer
}

// New returns the RBAC authorizer over the informers. Call it before the
// informers run: it registers a handler on ClusterRoleBindings.
func New(i Informers) *Authorizer {
	bootstrap := &bootstrapBindings{informer: i.ClusterRoleBindings}
	i.ClusterRoleBindings.AddHandler(bootstrap)
	step := func(s step) *rbac.RBACAuthorizer {
		g := getters{Informers: i, bootstrap: bootstrap, step: s}
		return rbac.New(g, g, g, g)
	}
	return &Authorizer{bootstrap: step(bootstrapStep), local: step(localStep), global: step(globalStep)}
}

// Steps returns the bootstrap, local and global steps, each answering with
// kcp's reason prefix.
func (a *Authorizer) Steps() (bootstrap, local, global authorizer.Authorizer) {
	return stepAuthorizer{a.bootstrap, bootstrapStep}, stepAuthorizer{a.local, localStep}, stepAuthorizer{a.global, globalStep}
}

// Authorize allows what one of the steps allows.
func (a *Authorizer) Authorize(ctx context.Context, attr authorizer.Attributes) (authorizer.Decision, string, error) {
	var errs []error
	for _, s := range []*rbac.RBACAuthorizer{a.bootstrap, a.local, a.global} {
		d, reason, err := s.Authorize(ctx, attr)
		if d == authorizer.DecisionAllow {
			return d, reason, err
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return authorizer.DecisionNoOpinion, "", utilerrors.NewAggregate(errs)
}

func (a *Authorizer) ConditionsAwareAuthorize(ctx context.Context, attr authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attr))
}

func (a *Authorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// RulesFor returns the rules of all three steps.
func (a *Authorizer) RulesFor(ctx context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	var (
		resources    []authorizer.ResourceRuleInfo
		nonResources []authorizer.NonResourceRuleInfo
		incomplete   bool
		errs         []error
	)
	for _, s := range []*rbac.RBACAuthorizer{a.bootstrap, a.local, a.global} {
		r, n, inc, err := s.RulesFor(ctx, u, namespace)
		resources, nonResources = append(resources, r...), append(nonResources, n...)
		incomplete = incomplete || inc
		if err != nil {
			errs = append(errs, err)
		}
	}
	return resources, nonResources, incomplete, utilerrors.NewAggregate(errs)
}

// step is one of kcp's RBAC steps.
type step int

const (
	bootstrapStep step = iota
	localStep
	globalStep
)

// stepAuthorizer is one step, its reasons prefixed as kcp's are.
type stepAuthorizer struct {
	*rbac.RBACAuthorizer
	step step
}

func (s stepAuthorizer) Authorize(ctx context.Context, attr authorizer.Attributes) (authorizer.Decision, string, error) {
	d, reason, err := s.RBACAuthorizer.Authorize(ctx, attr)
	// No reason stays none: a denial's reason is what clients show
	// (kubectl auth can-i prints "no - <reason>").
	if reason == "" {
		return d, reason, err
	}
	switch s.step {
	case bootstrapStep:
		return d, "bootstrap policy: " + reason, err
	case localStep:
		return d, fmt.Sprintf("local policy for cluster %q reason: %s", clusterOf(ctx), reason), err
	default:
		return d, fmt.Sprintf("global cluster %q policy: %s", clusterOf(ctx), reason), err
	}
}

func (s stepAuthorizer) ConditionsAwareAuthorize(ctx context.Context, attr authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(s.Authorize(ctx, attr))
}

// getters read the roles and bindings of one step.
type getters struct {
	Informers
	bootstrap *bootstrapBindings
	step      step
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
	var clusters []logicalcluster.Name
	switch g.step {
	case bootstrapStep:
		clusters = []logicalcluster.Name{BootstrapCluster}
	case localStep:
		clusters = []logicalcluster.Name{clusterOf(ctx), BootstrapCluster}
	}
	for _, cluster := range clusters {
		obj, exists, err := g.Roles.Get(cluster, namespace, name)
		if err != nil {
			return nil, err
		}
		if exists {
			return obj.(*rbacv1.Role), nil
		}
	}
	return nil, apierrors.NewNotFound(rbacv1.Resource("roles"), name)
}

func (g getters) ListRoleBindings(ctx context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	var cluster logicalcluster.Name
	switch g.step {
	case bootstrapStep:
		cluster = BootstrapCluster
	case localStep:
		if cluster = clusterOf(ctx); cluster == BootstrapCluster {
			return nil, nil
		}
	default:
		// Role bindings are not replicated.
		return nil, nil
	}
	objs, err := g.RoleBindings.List(cluster, namespace)
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
	type source struct {
		cluster  logicalcluster.Name
		informer *wildcardinformer.Informer
	}
	bootstrap := source{BootstrapCluster, g.ClusterRoles}
	var sources []source
	switch cluster := clusterOf(ctx); g.step {
	case bootstrapStep:
		sources = []source{bootstrap}
	case localStep:
		sources = []source{{cluster, g.ClusterRoles}, bootstrap}
	default:
		if g.GlobalClusterRoles != nil && g.global(cluster) {
			sources = []source{{cluster, g.GlobalClusterRoles}}
		}
		sources = append(sources, bootstrap)
	}
	for _, s := range sources {
		obj, exists, err := s.informer.Get(s.cluster, "", name)
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
	switch g.step {
	case bootstrapStep:
		return g.bootstrap.list()
	case localStep:
		if cluster == BootstrapCluster {
			return nil, nil
		}
		return listClusterRoleBindings(g.ClusterRoleBindings, cluster)
	default:
		if g.GlobalClusterRoleBindings == nil || !g.global(cluster) {
			return nil, nil
		}
		return listClusterRoleBindings(g.GlobalClusterRoleBindings, cluster)
	}
}
