// Package systemstatus keeps the status of kcp's own kinds (Workspace,
// WorkspaceType, LogicalCluster, Shard) in the system's hands: the status
// says what the system observed (phase, initializers, conditions), so only
// system:masters (the shard's loopback controllers among them) and
// system:kcp:logical-cluster-admin (the scheduler of another shard) may
// write it; kcp-admin (system:kcp:admin) may too for WorkspaceTypes and
// LogicalClusters, as kcp lets it (within the rules of package
// logicalcluster). A workspace's cluster-admin gets 403: kcp lets its RBAC
// decide, we are stricter.
package systemstatus

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/identities"
)

// guarded are the resources whose status only the system writes.
var guarded = map[schema.GroupResource]bool{
	corev1alpha1.Resource("logicalclusters"):   true,
	corev1alpha1.Resource("shards"):            true,
	tenancyv1alpha1.Resource("workspaces"):     true,
	tenancyv1alpha1.Resource("workspacetypes"): true,
}

// systemGroups are the groups of the identities that write status.
var systemGroups = []string{user.SystemPrivilegedGroup, identities.LogicalClusterAdminGroup}

// adminWritable are the guarded resources whose status kcp-admin writes too.
var adminWritable = map[schema.GroupResource]bool{
	corev1alpha1.Resource("logicalclusters"):   true,
	tenancyv1alpha1.Resource("workspacetypes"): true,
}

// Plugin refuses status writes of kcp's kinds by anyone but the system.
type Plugin struct{ *admission.Handler }

var _ admission.ValidationInterface = &Plugin{}

// New returns the plugin.
func New() *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Update)}
}

// IsSystem tells whether u is one of the identities that write the status
// of kcp's kinds.
func IsSystem(u user.Info) bool {
	for _, g := range u.GetGroups() {
		for _, s := range systemGroups {
			if g == s {
				return true
			}
		}
	}
	return false
}

// IsKCPAdmin tells whether u is kcp-admin (group system:kcp:admin).
func IsKCPAdmin(u user.Info) bool {
	return slices.Contains(u.GetGroups(), identities.KCPAdminGroup)
}

// Validate refuses updates (PUT, PATCH, apply) of the status subresource of
// a guarded resource by users outside the system.
func (p *Plugin) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	gr := a.GetResource().GroupResource()
	if a.GetSubresource() != "status" || !guarded[gr] || IsSystem(a.GetUserInfo()) {
		return nil
	}
	if adminWritable[gr] && IsKCPAdmin(a.GetUserInfo()) {
		return nil
	}
	return apierrors.NewForbidden(gr, a.GetName(),
		fmt.Errorf("the status of %s is written only by the system (%s, %s)", gr, user.SystemPrivilegedGroup, identities.LogicalClusterAdminGroup))
}
