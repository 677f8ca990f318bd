package apibinding

import (
	"fmt"
	"strings"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
)

// permissionClaimsReconciler copies the export's permission claims into
// status.exportPermissionClaims and says, in PermissionClaimsValid, whether
// the binding only decides on claims the export makes. Applying accepted
// claims comes with the export owner's access to them.
type permissionClaimsReconciler struct{}

func (r *permissionClaimsReconciler) reconcile(b *apisv1alpha2.APIBinding, export *apisv1alpha2.APIExport) {
	if export == nil {
		return
	}
	b.Status.ExportPermissionClaims = nil
	for _, c := range export.Spec.PermissionClaims {
		b.Status.ExportPermissionClaims = append(b.Status.ExportPermissionClaims, *c.DeepCopy())
	}
	var unexpected []string
	for _, accepted := range b.Spec.PermissionClaims {
		if !claimed(export.Spec.PermissionClaims, accepted.PermissionClaim) {
			unexpected = append(unexpected, claimString(accepted.PermissionClaim))
		}
	}
	if len(unexpected) > 0 {
		setFalse(b, apisv1alpha2.PermissionClaimsValid, apisv1alpha1.InvalidPermissionClaimsReason, conditionsv1alpha1.ConditionSeverityError,
			fmt.Sprintf("spec.permissionClaims decide on claims that APIExport %s does not make: %s; remove them", export.Name, strings.Join(unexpected, ", ")))
		return
	}
	setTrue(b, apisv1alpha2.PermissionClaimsValid)
}

func claimed(claims []apisv1alpha2.PermissionClaim, c apisv1alpha2.PermissionClaim) bool {
	for _, e := range claims {
		if e.Group == c.Group && e.Resource == c.Resource && e.IdentityHash == c.IdentityHash {
			return true
		}
	}
	return false
}

func claimString(c apisv1alpha2.PermissionClaim) string {
	s := groupResource(c.Group, c.Resource)
	if c.IdentityHash != "" {
		s += ":" + c.IdentityHash
	}
	return s
}
