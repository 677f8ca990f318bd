// Package apibinding owns the "bind" permission on APIExports (resource
// "apiexports" of apis.kcp.io, resourceName = export name), judged by the
// export workspace's authorization as kcp's binding permission check does.
// It is needed to create or update an APIBinding, to create an
// APIExportEndpointSlice (whose export must also exist), and to name an
// export in a WorkspaceType's defaultAPIBindings: the controller that
// creates those bindings acts as the system, so the type's writer must
// hold "bind" on each export. Status writes are not checked. It also sets
// kcp's export label (permissionclaim.ExportLabelKey) on APIBindings, by
// which the export's view finds the bindings of the export.
package apibinding

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/authorization/workspacecontent"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/permissionclaim"
)

// Config is what the plugin reads.
type Config struct {
	// ResolvePath maps a workspace path to its logical cluster, like the
	// shard does for requests.
	ResolvePath func(logicalcluster.Path) (logicalcluster.Name, bool)
	// Authorizer is the shard's authorizer, able to judge in other
	// shards' workspaces.
	Authorizer authorizer.Authorizer
	// ExportExists tells whether an APIExport exists, on this shard or
	// replicated from another.
	ExportExists func(cluster logicalcluster.Name, name string) bool
}

// Plugin checks the bind permission of APIBindings, endpoint slices and
// WorkspaceTypes' default bindings.
type Plugin struct {
	*admission.Handler
	Config
}

var (
	_ admission.ValidationInterface = &Plugin{}
	_ admission.MutationInterface   = &Plugin{}
)

// New returns the plugin.
func New(c Config) *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update), Config: c}
}

// ExportReference returns the path and name of the export an APIBinding
// of either version refers to; ok is false for other objects or a binding
// without an export reference (validation refuses those).
func ExportReference(obj interface{}) (path logicalcluster.Path, name string, ok bool) {
	switch b := obj.(type) {
	case *apisv1alpha2.APIBinding:
		if b.Spec.Reference.Export != nil {
			return logicalcluster.Path(b.Spec.Reference.Export.Path), b.Spec.Reference.Export.Name, true
		}
	case *apisv1alpha1.APIBinding:
		if b.Spec.Reference.Export != nil {
			return logicalcluster.Path(b.Spec.Reference.Export.Path), b.Spec.Reference.Export.Name, true
		}
	}
	return "", "", false
}

// Admit sets the export label of an APIBinding from its export reference,
// as kcp's apibinding admission does, overwriting whatever the client sent:
// the label decides which export's view shows the binding. A reference to
// a workspace not known (yet) gets no label.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" || a.GetResource().GroupResource() != apisv1alpha1.Resource("apibindings") {
		return nil
	}
	obj, err := meta.Accessor(a.GetObject())
	if err != nil {
		return nil
	}
	labels := obj.GetLabels()
	delete(labels, permissionclaim.ExportLabelKey)
	if path, name, ok := ExportReference(a.GetObject()); ok {
		cluster, _ := logicalcluster.ClusterFromContext(ctx)
		if exportCluster, ok := apisv1alpha2.ExportCluster(p.ResolvePath, cluster, path); ok {
			if labels == nil {
				labels = map[string]string{}
			}
			labels[permissionclaim.ExportLabelKey] = permissionclaim.ExportLabelValue(exportCluster, name)
		}
	}
	obj.SetLabels(labels)
	return nil
}

func privileged(u user.Info) bool {
	for _, g := range u.GetGroups() {
		if g == user.SystemPrivilegedGroup {
			return true
		}
	}
	return false
}

// Validate checks verb "bind" on the exports that APIBindings,
// APIExportEndpointSlices and WorkspaceTypes' defaultAPIBindings name.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" {
		return nil
	}
	switch a.GetResource().GroupResource() {
	case apisv1alpha1.Resource("apibindings"):
		return p.validateBinding(ctx, a)
	case apisv1alpha1.Resource("apiexportendpointslices"):
		return p.validateEndpointSlice(ctx, a)
	case tenancyv1alpha1.Resource("workspacetypes"):
		return p.validateWorkspaceType(ctx, a)
	}
	return nil
}

// mayBind tells whether the request's user may bind the export name at
// path (empty: the request's own workspace). An unknown workspace is a
// denial for all but system:masters, who may refer to it ahead of its
// creation; nobody learns whether it exists.
func (p *Plugin) mayBind(ctx context.Context, a admission.Attributes, path logicalcluster.Path, name string, mustExist bool) bool {
	cluster, _ := logicalcluster.ClusterFromContext(ctx)
	exportCluster, ok := apisv1alpha2.ExportCluster(p.ResolvePath, cluster, path)
	if privileged(a.GetUserInfo()) {
		return true
	}
	if !ok || (mustExist && (p.ExportExists == nil || !p.ExportExists(exportCluster, name))) {
		return false
	}
	bind := authorizer.AttributesRecord{
		User: a.GetUserInfo(), Verb: "bind", APIGroup: apisv1alpha1.GroupName, APIVersion: apisv1alpha2.SchemeGroupVersion.Version,
		Resource: "apiexports", Name: name, ResourceRequest: true,
	}
	// kcp asks with a deep SubjectAccessReview: "bind" granted in the
	// export's workspace is enough, without "access" to it. An authorizer
	// error is a denial; its text is not the user's business.
	decision, _, _ := p.Authorizer.Authorize(workspacecontent.WithDeepSAR(logicalcluster.WithCluster(ctx, exportCluster)), bind)
	return decision == authorizer.DecisionAllow
}

func (p *Plugin) validateBinding(ctx context.Context, a admission.Attributes) error {
	path, name, ok := ExportReference(a.GetObject())
	if !ok {
		return nil
	}
	action := "create"
	if a.GetOperation() == admission.Update {
		action = "update"
	}
	shown := path
	if shown == "" {
		cluster, _ := logicalcluster.ClusterFromContext(ctx)
		shown = cluster.Path()
	}
	if !p.mayBind(ctx, a, path, name, false) {
		return admission.NewForbidden(a, fmt.Errorf("unable to %s APIBinding: no permission to bind to export %s", action, shown.Join(name)))
	}
	return nil
}

// validateEndpointSlice checks the export of a new slice (the reference is
// immutable), which must exist; kcp's message speaks of create either way.
func (p *Plugin) validateEndpointSlice(ctx context.Context, a admission.Attributes) error {
	slice, ok := a.GetObject().(*apisv1alpha1.APIExportEndpointSlice)
	if !ok {
		return nil
	}
	if old, ok := a.GetOldObject().(*apisv1alpha1.APIExportEndpointSlice); ok && a.GetOperation() == admission.Update && old.Spec.APIExport == slice.Spec.APIExport {
		return nil
	}
	ref := slice.Spec.APIExport
	if !p.mayBind(ctx, a, logicalcluster.Path(ref.Path), ref.Name, true) {
		return admission.NewForbidden(a, fmt.Errorf("unable to create APIExportEndpointSlice: no permission to bind to export %s", logicalcluster.Path(ref.Path).Join(ref.Name)))
	}
	return nil
}

// validateWorkspaceType checks each default binding a create adds, or an
// update adds to those the type had.
func (p *Plugin) validateWorkspaceType(ctx context.Context, a admission.Attributes) error {
	wt, ok := a.GetObject().(*tenancyv1alpha1.WorkspaceType)
	if !ok {
		return nil
	}
	had := map[tenancyv1alpha1.APIExportReference]bool{}
	if old, ok := a.GetOldObject().(*tenancyv1alpha1.WorkspaceType); ok && a.GetOperation() == admission.Update {
		for _, ref := range old.Spec.DefaultAPIBindings {
			had[ref] = true
		}
	}
	for _, ref := range wt.Spec.DefaultAPIBindings {
		if had[ref] {
			continue
		}
		if !p.mayBind(ctx, a, logicalcluster.Path(ref.Path), ref.Export, false) {
			return admission.NewForbidden(a, fmt.Errorf("no permission to bind to export %s", logicalcluster.Path(ref.Path).Join(ref.Export)))
		}
	}
	return nil
}
