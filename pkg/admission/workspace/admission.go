// Package workspace admits Workspaces: it fills in the type (the parent
// type's default child type), checks the WorkspaceType rules (allowed parents
// and children, the "use" verb), records the creator as owner and gives the
// workspace its parent's required groups. Only system:masters chooses
// required groups or touches the scheduler's annotations.
package workspace

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/authorization/workspacecontent"
	"github.com/shardplane/shardplane/pkg/features"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/workspacetypes"
)

// Plugin admits workspaces.
type Plugin struct {
	*admission.Handler
	types             workspacetypes.Resolver
	getLogicalCluster func(logicalcluster.Name) *corev1alpha1.LogicalCluster
	authorizer        authorizer.Authorizer
}

var (
	_ admission.MutationInterface   = &Plugin{}
	_ admission.ValidationInterface = &Plugin{}
)

// New returns the plugin.
func New(types workspacetypes.Resolver, getLogicalCluster func(logicalcluster.Name) *corev1alpha1.LogicalCluster, authz authorizer.Authorizer) *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update), types: types, getLogicalCluster: getLogicalCluster, authorizer: authz}
}

func isWorkspace(a admission.Attributes) bool {
	return a.GetResource().GroupResource() == tenancyv1alpha1.Resource("workspaces") && a.GetSubresource() == ""
}

func privileged(u user.Info) bool {
	for _, g := range u.GetGroups() {
		if g == user.SystemPrivilegedGroup {
			return true
		}
	}
	return false
}

// Admit defaults spec.type and records the owner on create.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if !isWorkspace(a) || a.GetOperation() != admission.Create {
		return nil
	}
	ws, ok := a.GetObject().(*tenancyv1alpha1.Workspace)
	if !ok {
		return nil
	}
	cluster, _ := logicalcluster.ClusterFromContext(ctx)
	parent := p.getLogicalCluster(cluster)
	if parent == nil {
		return apierrors.NewForbidden(a.GetResource().GroupResource(), a.GetName(), fmt.Errorf("workspace %s is not ready for child workspaces", cluster))
	}
	parentPath := logicalcluster.Path(parent.Annotations[logicalcluster.PathAnnotationKey])
	if parentPath == "" {
		parentPath = cluster.Path()
	}
	if ws.Spec.Mount != nil {
		// A mounted workspace has no logical cluster, hence no type (kcp).
	} else if ws.Spec.Type == nil || ws.Spec.Type.Name == "" {
		parentRef, ok := workspacetypes.ParseTypeAnnotation(parent.Annotations[corev1alpha1.LogicalClusterTypeAnnotationKey])
		def := &tenancyv1alpha1.WorkspaceTypeReference{Name: tenancyv1alpha1.UniversalWorkspaceTypeName, Path: string(logicalcluster.Root)}
		if ok {
			if pwt, pref, err := p.types.Resolve(parentRef, parentPath); err == nil && pwt.Spec.DefaultChildWorkspaceType != nil {
				d := *pwt.Spec.DefaultChildWorkspaceType
				if d.Path == "" {
					d.Path = pref.Path
				}
				def = &d
			}
		}
		ws.Spec.Type = def
	}
	if ws.Spec.Type != nil {
		if _, ref, err := p.types.Resolve(*ws.Spec.Type, parentPath); err == nil {
			ws.Spec.Type = &ref
		}
	}
	if ws.Annotations == nil {
		ws.Annotations = map[string]string{}
	}
	if !privileged(a.GetUserInfo()) || ws.Annotations[corev1alpha1.ExperimentalWorkspaceOwnerAnnotationKey] == "" {
		u := a.GetUserInfo()
		owner, err := corev1alpha1.OwnerAnnotation(u.GetName(), u.GetUID(), u.GetGroups())
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		ws.Annotations[corev1alpha1.ExperimentalWorkspaceOwnerAnnotationKey] = owner
	}
	inheritRequiredGroups(ws, parent, privileged(a.GetUserInfo()))
	if !privileged(a.GetUserInfo()) {
		for _, k := range schedulingAnnotations {
			delete(ws.Annotations, k)
		}
	}
	return nil
}

// schedulingAnnotations are the scheduler's bookkeeping on a Workspace.
var schedulingAnnotations = []string{
	corev1alpha1.ShardAnnotationKey,
	tenancyv1alpha1.WorkspaceShardHashAnnotationKey,
	tenancyv1alpha1.WorkspaceClusterAnnotationKey,
}

// inheritRequiredGroups gives a new workspace the required groups of its
// parent (or none), whatever its creator sent, as kcp does; only
// system:masters may choose another value.
func inheritRequiredGroups(ws *tenancyv1alpha1.Workspace, parent *corev1alpha1.LogicalCluster, privileged bool) {
	if _, set := ws.Annotations[corev1alpha1.RequiredGroupsAnnotationKey]; set && privileged {
		return
	}
	if groups, ok := parent.Annotations[corev1alpha1.RequiredGroupsAnnotationKey]; ok {
		ws.Annotations[corev1alpha1.RequiredGroupsAnnotationKey] = groups
		return
	}
	delete(ws.Annotations, corev1alpha1.RequiredGroupsAnnotationKey)
}

// systemAnnotationChange returns an annotation of the system that an update
// of ws changes, or "".
func systemAnnotationChange(old, ws *tenancyv1alpha1.Workspace) string {
	for _, k := range append([]string{corev1alpha1.RequiredGroupsAnnotationKey}, schedulingAnnotations...) {
		ov, oldOK := old.Annotations[k]
		nv, newOK := ws.Annotations[k]
		if oldOK != newOK || ov != nv {
			return k
		}
	}
	return ""
}

// Validate enforces the type rules and system-owned fields.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if !isWorkspace(a) {
		return nil
	}
	ws, ok := a.GetObject().(*tenancyv1alpha1.Workspace)
	if !ok {
		return nil
	}
	gr := a.GetResource().GroupResource()
	if a.GetOperation() == admission.Update {
		old, ok := a.GetOldObject().(*tenancyv1alpha1.Workspace)
		if !ok || privileged(a.GetUserInfo()) {
			return nil
		}
		if old.Spec.Cluster != ws.Spec.Cluster || old.Spec.URL != ws.Spec.URL {
			return apierrors.NewForbidden(gr, a.GetName(), fmt.Errorf("spec.cluster and spec.URL are set by the system"))
		}
		if k := systemAnnotationChange(old, ws); k != "" {
			return apierrors.NewForbidden(gr, a.GetName(), fmt.Errorf("annotation %s is set by the system", k))
		}
		return nil
	}
	if !privileged(a.GetUserInfo()) && (ws.Spec.Cluster != "" || ws.Spec.URL != "") {
		return apierrors.NewForbidden(gr, a.GetName(), fmt.Errorf("spec.cluster and spec.URL are set by the system"))
	}
	if ws.Spec.Mount != nil {
		return validateMount(a, ws)
	}
	cluster, _ := logicalcluster.ClusterFromContext(ctx)
	parent := p.getLogicalCluster(cluster)
	if parent == nil {
		return apierrors.NewForbidden(gr, a.GetName(), fmt.Errorf("workspace %s is not ready for child workspaces", cluster))
	}
	parentPath := logicalcluster.Path(parent.Annotations[logicalcluster.PathAnnotationKey])
	if parentPath == "" {
		parentPath = cluster.Path()
	}
	typeField := field.NewPath("spec", "type")
	child, childRef, err := p.types.Resolve(*ws.Spec.Type, parentPath)
	if err != nil {
		return apierrors.NewInvalid(tenancyv1alpha1.Kind("Workspace"), a.GetName(), field.ErrorList{field.Invalid(typeField, ws.Spec.Type.String(), err.Error())})
	}
	_, childRefs, err := p.types.ExtendedTypes(child, childRef)
	if err != nil {
		return apierrors.NewInvalid(tenancyv1alpha1.Kind("Workspace"), a.GetName(), field.ErrorList{field.Invalid(typeField, childRef.String(), err.Error())})
	}
	if parentRef, ok := workspacetypes.ParseTypeAnnotation(parent.Annotations[corev1alpha1.LogicalClusterTypeAnnotationKey]); ok {
		parentType, parentRef, err := p.types.Resolve(parentRef, parentPath)
		if err == nil {
			_, parentRefs, err := p.types.ExtendedTypes(parentType, parentRef)
			if err == nil {
				if err := workspacetypes.CheckParentChild(parentType, parentRefs, child, childRefs); err != nil {
					return apierrors.NewInvalid(tenancyv1alpha1.Kind("Workspace"), a.GetName(), field.ErrorList{field.Invalid(typeField, childRef.String(), err.Error())})
				}
			}
		}
	}
	if privileged(a.GetUserInfo()) {
		return nil
	}
	typeCluster, ok := p.types.ResolvePath(logicalcluster.Path(childRef.Path))
	if !ok {
		typeCluster, _ = logicalcluster.Path(childRef.Path).Name()
	}
	use := authorizer.AttributesRecord{
		User: a.GetUserInfo(), Verb: "use", APIGroup: tenancyv1alpha1.GroupName, APIVersion: tenancyv1alpha1.SchemeGroupVersion.Version,
		Resource: "workspacetypes", Name: tenancyv1alpha1.ObjectName(childRef.Name), ResourceRequest: true,
	}
	// kcp asks with a deep SubjectAccessReview: "use" granted in the
	// type's workspace is enough, without "access" to it.
	d, _, _ := p.authorizer.Authorize(workspacecontent.WithDeepSAR(logicalcluster.WithCluster(ctx, typeCluster)), use)
	if d != authorizer.DecisionAllow {
		return apierrors.NewForbidden(gr, a.GetName(), fmt.Errorf("user %q may not use workspace type %s: verb \"use\" on workspacetypes %q in workspace %s is required", a.GetUserInfo().GetName(), childRef.String(), childRef.Name, childRef.Path))
	}
	return nil
}

// validateMount admits a new mounted workspace: only with the
// WorkspaceMounts gate, and, as in kcp, without a type unless the creator
// is system:masters (a mount has no logical cluster for a type to shape).
func validateMount(a admission.Attributes, ws *tenancyv1alpha1.Workspace) error {
	mountField := field.NewPath("spec", "mount")
	if !features.Enabled(features.WorkspaceMounts) {
		return apierrors.NewInvalid(tenancyv1alpha1.Kind("Workspace"), a.GetName(), field.ErrorList{
			field.Forbidden(mountField, "workspace mounts are not enabled: the shard runs without the WorkspaceMounts feature gate"),
		})
	}
	if ws.Spec.Type != nil && !privileged(a.GetUserInfo()) {
		return apierrors.NewForbidden(a.GetResource().GroupResource(), a.GetName(), fmt.Errorf("spec.type cannot be set for mounted workspaces"))
	}
	return nil
}
