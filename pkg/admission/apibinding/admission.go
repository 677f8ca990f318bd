// Package apibinding admits APIBindings: creating or updating one needs
// verb "bind" on the referenced APIExport (resource "apiexports" of
// apis.kcp.io, resourceName = export name) in the export's workspace,
// judged by that workspace's authorization, as kcp's binding permission
// check does. Status writes (the binding controller's) are not checked.
package apibinding

import (
	"context"
	"fmt"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// Plugin checks the bind permission of APIBindings.
type Plugin struct {
	*admission.Handler
	// resolvePath maps a workspace path to its logical cluster.
	resolvePath func(logicalcluster.Path) (logicalcluster.Name, bool)
	authorizer  authorizer.Authorizer
}

var _ admission.ValidationInterface = &Plugin{}

// New returns the plugin. resolvePath resolves workspace paths like the
// shard does for requests; authz is the shard's authorizer.
func New(resolvePath func(logicalcluster.Path) (logicalcluster.Name, bool), authz authorizer.Authorizer) *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update), resolvePath: resolvePath, authorizer: authz}
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

func privileged(u user.Info) bool {
	for _, g := range u.GetGroups() {
		if g == user.SystemPrivilegedGroup {
			return true
		}
	}
	return false
}

// Validate checks verb "bind" on the referenced export in its workspace.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != apisv1alpha1.Resource("apibindings") || a.GetSubresource() != "" {
		return nil
	}
	path, name, ok := ExportReference(a.GetObject())
	if !ok {
		return nil
	}
	action := "create"
	if a.GetOperation() == admission.Update {
		action = "update"
	}
	cluster, _ := logicalcluster.ClusterFromContext(ctx)
	shown := path
	if shown == "" {
		shown = cluster.Path()
	}
	exportCluster, ok := apisv1alpha2.ExportCluster(p.resolvePath, cluster, path)
	if !ok {
		// An unknown workspace: only system:masters may bind ahead of it,
		// and nobody learns whether it exists.
		if privileged(a.GetUserInfo()) {
			return nil
		}
		return admission.NewForbidden(a, fmt.Errorf("unable to %s APIBinding: no permission to bind to export %s", action, shown.Join(name)))
	}
	bind := authorizer.AttributesRecord{
		User: a.GetUserInfo(), Verb: "bind", APIGroup: apisv1alpha1.GroupName, APIVersion: apisv1alpha2.SchemeGroupVersion.Version,
		Resource: "apiexports", Name: name, ResourceRequest: true,
	}
	// An authorizer error is a denial; its text is not the user's business.
	if decision, _, _ := p.authorizer.Authorize(logicalcluster.WithCluster(ctx, exportCluster), bind); decision != authorizer.DecisionAllow {
		return admission.NewForbidden(a, fmt.Errorf("unable to %s APIBinding: no permission to bind to export %s", action, shown.Join(name)))
	}
	return nil
}
