// Package bootstrap creates what a fresh root shard needs, idempotently on
// every start: the root logical cluster, kcp's system exports of its own
// kinds (with identities that never change once created) and root's
// bindings to them, the built-in WorkspaceTypes, the shard's own Shard
// object and the RBAC that lets users in.
package bootstrap

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// Names of the bootstrap RBAC.
const (
	// WorkspaceAccessClusterRole grants the non-resource verb "access" on "/".
	WorkspaceAccessClusterRole = "system:kcp:workspace:access"
	// WorkspaceTypesUseClusterRole lets users create workspaces of the
	// built-in types universal, organization and team.
	WorkspaceTypesUseClusterRole = "system:kcp:workspacetypes:use"
	// MetricsReaderClusterRole grants get on the shard's /metrics; bound in
	// root, it lets a scraper read every shard's metrics.
	MetricsReaderClusterRole = "system:kcp:metrics-reader"
	// HomeCreateClusterRole, in root, lets users get the Workspace "~" (their
	// home) and have it created (pkg/home); bound to system:authenticated,
	// the shard's --home-workspaces-home-creator-groups narrow who gets one.
	HomeCreateClusterRole = "system:kcp:home-clusterworkspace-create"
)

// Shard describes this shard's Shard object.
type Shard struct {
	Name        string
	BaseURL     string
	ExternalURL string
	// VirtualWorkspaceURL is where clients reach the shard's views.
	VirtualWorkspaceURL string
	Labels              map[string]string
	// WorkspaceSoftLimit and WorkspaceHardLimit, when above 0, replace the
	// Shard's limits of workspaces; 0 keeps what it has.
	WorkspaceSoftLimit, WorkspaceHardLimit int64
}

// resourceLimits returns current with the limits the shard's flags set.
func (s Shard) resourceLimits(current *corev1alpha1.ShardResourceLimits) *corev1alpha1.ShardResourceLimits {
	if s.WorkspaceSoftLimit <= 0 && s.WorkspaceHardLimit <= 0 {
		return current
	}
	limits := &corev1alpha1.ShardResourceLimits{}
	if current != nil {
		limits = current.DeepCopy()
	}
	set := func(list *corev1.ResourceList, n int64) {
		if n <= 0 {
			return
		}
		if *list == nil {
			*list = corev1.ResourceList{}
		}
		(*list)[corev1alpha1.ResourceWorkspaces] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	set(&limits.Soft, s.WorkspaceSoftLimit)
	set(&limits.Hard, s.WorkspaceHardLimit)
	return limits
}

// Root bootstraps the root shard through loopback clients. identities
// (from --root-identities-file) become the identities of root's exports
// that have none yet.
func Root(ctx context.Context, loopback *rest.Config, shard Shard, identities []Identity) error {
	kcp, err := kcpclient.New(loopback)
	if err != nil {
		return err
	}
	if err := systemAdminRBAC(ctx, loopback); err != nil {
		return err
	}
	if err := rootLogicalCluster(ctx, kcp); err != nil {
		return err
	}
	root, err := kubernetes.NewForConfig(kcpclient.ClusterConfig(loopback, logicalcluster.Root))
	if err != nil {
		return err
	}
	// The policy of the tenancy export is in place before root binds it.
	if err := systemExportsRBAC(ctx, root); err != nil {
		return err
	}
	if err := seedIdentities(ctx, root, identities); err != nil {
		return err
	}
	if err := ensureSystemExports(ctx, kcp); err != nil {
		return err
	}
	if err := bindRootAPIs(ctx, kcp); err != nil {
		return err
	}
	for _, wt := range builtinTypes() {
		if err := createOrUpdate(ctx, kcp, logicalcluster.Root, kcpclient.WorkspaceTypes, wt.Name, wt, &tenancyv1alpha1.WorkspaceType{}, func(existing runtime.Object) bool {
			return apiequality.Semantic.DeepEqual(existing.(*tenancyv1alpha1.WorkspaceType).Spec, wt.Spec)
		}); err != nil {
			return fmt.Errorf("workspace type %s: %w", wt.Name, err)
		}
	}
	if err := RegisterShard(ctx, kcp, shard); err != nil {
		return err
	}
	return rootRBAC(ctx, loopback)
}

// RegisterShard creates or updates the Shard object of a shard in root:
// its URLs, its labels and the limits its flags set. What others set on it
// stays: annotations (a cordon), limits set with kubectl, the status.
func RegisterShard(ctx context.Context, kcp *kcpclient.Client, shard Shard) error {
	labels := map[string]string{corev1alpha1.ShardNameLabel: shard.Name}
	for k, v := range shard.Labels {
		labels[k] = v
	}
	spec := corev1alpha1.ShardSpec{BaseURL: shard.BaseURL, ExternalURL: shard.ExternalURL, VirtualWorkspaceURL: shard.VirtualWorkspaceURL}
	existing := &corev1alpha1.Shard{}
	err := kcp.Get(ctx, logicalcluster.Root, kcpclient.Shards, shard.Name, existing)
	if apierrors.IsNotFound(err) {
		spec.ResourceLimits = shard.resourceLimits(nil)
		obj := &corev1alpha1.Shard{
			TypeMeta:   metav1.TypeMeta{APIVersion: corev1alpha1.SchemeGroupVersion.String(), Kind: "Shard"},
			ObjectMeta: metav1.ObjectMeta{Name: shard.Name, Labels: labels},
			Spec:       spec,
		}
		err = kcp.Create(ctx, logicalcluster.Root, kcpclient.Shards, obj, &corev1alpha1.Shard{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	if err != nil {
		return err
	}
	spec.ResourceLimits = shard.resourceLimits(existing.Spec.ResourceLimits)
	if apiequality.Semantic.DeepEqual(existing.Spec, spec) && apiequality.Semantic.DeepEqual(existing.Labels, labels) {
		return nil
	}
	updated := existing.DeepCopy()
	updated.APIVersion, updated.Kind = corev1alpha1.SchemeGroupVersion.String(), "Shard"
	updated.Labels, updated.Spec = labels, spec
	return kcp.Update(ctx, logicalcluster.Root, kcpclient.Shards, shard.Name, updated, &corev1alpha1.Shard{})
}

// createOrUpdate creates obj, or replaces the existing one unless upToDate.
func createOrUpdate(ctx context.Context, kcp *kcpclient.Client, cluster logicalcluster.Name, gvr schema.GroupVersionResource,
	name string, obj, existing runtime.Object, upToDate func(existing runtime.Object) bool) error {
	err := kcp.Get(ctx, cluster, gvr, name, existing)
	if apierrors.IsNotFound(err) {
		err = kcp.Create(ctx, cluster, gvr, obj, existing)
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	if err != nil || upToDate(existing) {
		return err
	}
	em, _ := meta.Accessor(existing)
	om, _ := meta.Accessor(obj)
	om.SetResourceVersion(em.GetResourceVersion())
	return kcp.Update(ctx, cluster, gvr, name, obj, existing)
}

// rootLogicalCluster makes root exist: its LogicalCluster, Ready.
func rootLogicalCluster(ctx context.Context, kcp *kcpclient.Client) error {
	lc := &corev1alpha1.LogicalCluster{}
	err := kcp.Get(ctx, logicalcluster.Root, kcpclient.LogicalClusters, corev1alpha1.LogicalClusterName, lc)
	if apierrors.IsNotFound(err) {
		lc = &corev1alpha1.LogicalCluster{
			TypeMeta: metav1.TypeMeta{APIVersion: corev1alpha1.SchemeGroupVersion.String(), Kind: "LogicalCluster"},
			ObjectMeta: metav1.ObjectMeta{Name: corev1alpha1.LogicalClusterName, Annotations: map[string]string{
				logicalcluster.PathAnnotationKey:             string(logicalcluster.Root),
				corev1alpha1.LogicalClusterTypeAnnotationKey: "root:root",
			}},
		}
		err = kcp.Create(ctx, logicalcluster.Root, kcpclient.LogicalClusters, lc, lc)
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	return err
}

func ref(name tenancyv1alpha1.WorkspaceTypeName) tenancyv1alpha1.WorkspaceTypeReference {
	return tenancyv1alpha1.WorkspaceTypeReference{Name: name, Path: string(logicalcluster.Root)}
}

func workspaceType(name tenancyv1alpha1.WorkspaceTypeName, spec tenancyv1alpha1.WorkspaceTypeSpec) *tenancyv1alpha1.WorkspaceType {
	return &tenancyv1alpha1.WorkspaceType{
		TypeMeta: metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "WorkspaceType"},
		ObjectMeta: metav1.ObjectMeta{Name: tenancyv1alpha1.ObjectName(name), Annotations: map[string]string{
			logicalcluster.PathAnnotationKey: string(logicalcluster.Root),
		}},
		Spec: spec,
	}
}

// builtinTypes are the WorkspaceTypes of root (docs/api.md).
func builtinTypes() []*tenancyv1alpha1.WorkspaceType {
	universal := ref(tenancyv1alpha1.UniversalWorkspaceTypeName)
	organization := ref(tenancyv1alpha1.OrganizationWorkspaceTypeName)
	team := ref(tenancyv1alpha1.TeamWorkspaceTypeName)
	return []*tenancyv1alpha1.WorkspaceType{
		workspaceType(tenancyv1alpha1.RootWorkspaceTypeName, tenancyv1alpha1.WorkspaceTypeSpec{
			LimitAllowedParents:       &tenancyv1alpha1.WorkspaceTypeSelector{None: true},
			DefaultChildWorkspaceType: &organization,
		}),
		workspaceType(tenancyv1alpha1.UniversalWorkspaceTypeName, tenancyv1alpha1.WorkspaceTypeSpec{
			DefaultChildWorkspaceType: &universal,
			DefaultAPIBindings:        defaultSystemBindings,
		}),
		workspaceType(tenancyv1alpha1.OrganizationWorkspaceTypeName, tenancyv1alpha1.WorkspaceTypeSpec{
			LimitAllowedParents:       &tenancyv1alpha1.WorkspaceTypeSelector{Types: []tenancyv1alpha1.WorkspaceTypeReference{ref(tenancyv1alpha1.RootWorkspaceTypeName)}},
			DefaultChildWorkspaceType: &universal,
			DefaultAPIBindings:        defaultSystemBindings,
		}),
		workspaceType(tenancyv1alpha1.TeamWorkspaceTypeName, tenancyv1alpha1.WorkspaceTypeSpec{
			LimitAllowedParents:       &tenancyv1alpha1.WorkspaceTypeSelector{Types: []tenancyv1alpha1.WorkspaceTypeReference{organization, team}},
			DefaultChildWorkspaceType: &universal,
			DefaultAPIBindings:        defaultSystemBindings,
		}),
		workspaceType(tenancyv1alpha1.HomeWorkspaceTypeName, tenancyv1alpha1.WorkspaceTypeSpec{
			Extend:                    tenancyv1alpha1.WorkspaceTypeExtension{With: []tenancyv1alpha1.WorkspaceTypeReference{universal}},
			LimitAllowedParents:       &tenancyv1alpha1.WorkspaceTypeSelector{None: true},
			DefaultChildWorkspaceType: &universal,
		}),
	}
}

// ensureClusterRole creates or updates a ClusterRole.
func ensureClusterRole(ctx context.Context, c kubernetes.Interface, role *rbacv1.ClusterRole) error {
	existing, err := c.RbacV1().ClusterRoles().Get(ctx, role.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = c.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
		return err
	}
	if err != nil || apiequality.Semantic.DeepEqual(existing.Rules, role.Rules) {
		return err
	}
	existing.Rules = role.Rules
	_, err = c.RbacV1().ClusterRoles().Update(ctx, existing, metav1.UpdateOptions{})
	return err
}

// ensureClusterRoleBinding creates a ClusterRoleBinding if missing.
func ensureClusterRoleBinding(ctx context.Context, c kubernetes.Interface, b *rbacv1.ClusterRoleBinding) error {
	_, err := c.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// systemAdminRBAC adds the kcp ClusterRoles to the bootstrap policy in
// system:admin, so every logical cluster can bind them.
func systemAdminRBAC(ctx context.Context, loopback *rest.Config) error {
	c, err := kubernetes.NewForConfig(kcpclient.ClusterConfig(loopback, logicalcluster.SystemAdmin))
	if err != nil {
		return err
	}
	if err := ensureClusterRole(ctx, c, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: WorkspaceAccessClusterRole},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"access"}, NonResourceURLs: []string{"/"}}},
	}); err != nil {
		return err
	}
	if err := ensureClusterRole(ctx, c, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: MetricsReaderClusterRole},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}}},
	}); err != nil {
		return err
	}
	return ensureClusterRole(ctx, c, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: WorkspaceTypesUseClusterRole},
		Rules: []rbacv1.PolicyRule{{
			Verbs: []string{"use"}, APIGroups: []string{tenancyv1alpha1.GroupName}, Resources: []string{"workspacetypes"},
			ResourceNames: []string{string(tenancyv1alpha1.UniversalWorkspaceTypeName), string(tenancyv1alpha1.OrganizationWorkspaceTypeName), string(tenancyv1alpha1.TeamWorkspaceTypeName)},
		}},
	})
}

// rootRBAC lets every authenticated user into root, use the built-in
// types and have a home workspace.
func rootRBAC(ctx context.Context, loopback *rest.Config) error {
	c, err := kubernetes.NewForConfig(kcpclient.ClusterConfig(loopback, logicalcluster.Root))
	if err != nil {
		return err
	}
	if err := ensureClusterRole(ctx, c, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: HomeCreateClusterRole},
		Rules: []rbacv1.PolicyRule{{
			Verbs: []string{"get", "create"}, APIGroups: []string{tenancyv1alpha1.GroupName}, Resources: []string{"workspaces"}, ResourceNames: []string{"~"},
		}},
	}); err != nil {
		return err
	}
	authenticated := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: user.AllAuthenticated}}
	for _, role := range []string{WorkspaceAccessClusterRole, WorkspaceTypesUseClusterRole, HomeCreateClusterRole} {
		if err := ensureClusterRoleBinding(ctx, c, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role + ":authenticated"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   authenticated,
		}); err != nil {
			return err
		}
	}
	return nil
}
