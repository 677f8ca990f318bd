package apibinding

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/permissionclaim"
)

// maxClaimErrors bounds the errors a condition message lists, as kcp does.
const maxClaimErrors = 10

// permissionClaimsReconciler copies the export's permission claims into
// status.exportPermissionClaims, says in PermissionClaimsValid whether the
// binding accepts only claims the export makes, and applies the accepted
// ones, as kcp's permissionclaimlabel controller does: the objects of a
// claim that changed are relabelled (the permissionclaims admission plugin
// computes their labels), then status.appliedPermissionClaims and
// PermissionClaimsApplied say what is in effect.
type permissionClaimsReconciler struct {
	// relabel has the objects of a resource in a cluster rewritten so that
	// admission gives them the claim labels of the cluster's bindings as
	// the shard's informer shows them; nil relabels nothing.
	relabel func(ctx context.Context, cluster logicalcluster.Name, gr schema.GroupResource) error
}

// reconcile updates b's claim status from export. stored is the status the
// informer (and so admission) shows: objects are relabelled only once it
// holds the export's claims.
func (r *permissionClaimsReconciler) reconcile(ctx context.Context, cluster logicalcluster.Name, b *apisv1alpha2.APIBinding, stored *apisv1alpha2.APIBindingStatus, export *apisv1alpha2.APIExport) error {
	if export == nil {
		return nil
	}
	b.Status.ExportPermissionClaims = nil
	for _, c := range export.Spec.PermissionClaims {
		b.Status.ExportPermissionClaims = append(b.Status.ExportPermissionClaims, *c.DeepCopy())
	}

	accepted := map[string]apisv1alpha2.ScopedPermissionClaim{}
	for _, c := range b.Spec.PermissionClaims {
		if c.State == apisv1alpha2.ClaimAccepted {
			accepted[claimKey(c.PermissionClaim)] = c.ScopedPermissionClaim
		}
	}
	expected := map[string]bool{}
	var unexpected []error
	for _, k := range sortedKeys(accepted) {
		c := accepted[k]
		if claimed(export.Spec.PermissionClaims, c.PermissionClaim) {
			expected[k] = true
			continue
		}
		unexpected = append(unexpected, fmt.Errorf("unexpected/invalid claim for %s.%s (identity %q)", c.Resource, c.Group, c.IdentityHash))
	}
	if len(unexpected) > 0 {
		shown := unexpected[:min(len(unexpected), maxClaimErrors)]
		setFalse(b, apisv1alpha2.PermissionClaimsValid, apisv1alpha1.InvalidPermissionClaimsReason, conditionsv1alpha1.ConditionSeverityError,
			fmt.Sprintf("%d unexpected and/or invalid permission claims (showing first %d): %v", len(unexpected), len(shown), utilerrors.NewAggregate(shown)))
	} else {
		setTrue(b, apisv1alpha2.PermissionClaimsValid)
	}

	// Admission labels by the export claims the informer shows; until the
	// new ones are written there, relabelling would apply the old ones.
	if !apiequality.Semantic.DeepEqual(stored.ExportPermissionClaims, b.Status.ExportPermissionClaims) {
		return nil
	}

	// A claim changed when it is expected and not applied (or applied with
	// another selector), or applied and no longer expected (revoked, or no
	// longer made by the export).
	applied := map[string]apisv1alpha2.ScopedPermissionClaim{}
	for _, c := range b.Status.AppliedPermissionClaims {
		applied[claimKey(c.PermissionClaim)] = c
	}
	changed := map[schema.GroupResource][]string{}
	for k := range expected {
		if a, ok := applied[k]; !ok || !apiequality.Semantic.DeepEqual(a.Selector, accepted[k].Selector) {
			gr := groupResourceOf(k)
			changed[gr] = append(changed[gr], k)
		}
	}
	for k := range applied {
		if !expected[k] {
			gr := groupResourceOf(k)
			changed[gr] = append(changed[gr], k)
		}
	}
	var errs []error
	failed := map[string]bool{}
	for _, gr := range sortedGroupResources(changed) {
		if !permissionclaim.Persisted(gr) || r.relabel == nil {
			continue
		}
		if err := r.relabel(ctx, cluster, gr); err != nil {
			errs = append(errs, fmt.Errorf("relabelling %s: %w", gr, err))
			for _, k := range changed[gr] {
				failed[k] = true
			}
		}
	}

	b.Status.AppliedPermissionClaims = nil
	for _, k := range sortedKeys(accepted) {
		if expected[k] && !failed[k] {
			b.Status.AppliedPermissionClaims = append(b.Status.AppliedPermissionClaims, accepted[k])
		}
	}
	if len(errs) > 0 {
		shown := errs[:min(len(errs), maxClaimErrors)]
		setFalse(b, apisv1alpha2.PermissionClaimsApplied, apisv1alpha1.InternalErrorReason, conditionsv1alpha1.ConditionSeverityError,
			fmt.Sprintf("Permission claims have not been fully applied: %v", utilerrors.NewAggregate(shown)))
		return fmt.Errorf("applying the permission claims of APIBinding %s|%s: %w", cluster, b.Name, errors.Join(errs...))
	}
	setTrue(b, apisv1alpha2.PermissionClaimsApplied)
	return nil
}

// claimKey is kcp's key of a claim: resource/group/identity.
func claimKey(c apisv1alpha2.PermissionClaim) string {
	return c.Resource + "/" + c.Group + "/" + c.IdentityHash
}

func groupResourceOf(key string) schema.GroupResource {
	parts := strings.SplitN(key, "/", 3)
	return schema.GroupResource{Resource: parts[0], Group: parts[1]}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortedGroupResources(m map[schema.GroupResource][]string) []schema.GroupResource {
	out := make([]schema.GroupResource, 0, len(m))
	for gr := range m {
		out = append(out, gr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

func claimed(claims []apisv1alpha2.PermissionClaim, c apisv1alpha2.PermissionClaim) bool {
	for _, e := range claims {
		if e.EqualGRI(c) {
			return true
		}
	}
	return false
}
