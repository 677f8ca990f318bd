// Package maximalpermission enforces the maximal permission policy of
// APIExports: a resource that a logical cluster serves through an
// APIBinding, from an APIExport with spec.maximalPermissionPolicy.local,
// may be used only as far as the RBAC of the export's logical cluster
// allows the requester with its user name and every group prefixed
// "apis.kcp.io:binding:".
//
// The check is an upper bound, not a grant: when the export's policy
// allows, the authorizer has no opinion and the consumer's own RBAC still
// decides; when it does not, the request is denied with a reason naming the
// export. Resources not bound from an export with a local policy, and
// non-resource requests, are left to the next authorizer. Subresources of a
// bound resource are bound too: the policy must allow "widgets/status" for
// a status update. Nobody is exempt but the members of system:masters,
// which the chain allows before this authorizer runs (as in kcp, where
// system:kcp:admin too needs the prefixed grant in the export's cluster).
package maximalpermission

import (
	"context"
	"fmt"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/scope"
)

const (
	// Prefix is prepended to the user name and to every group of the
	// requester before the export's RBAC judges the request, so that
	// grants meant as a policy for consumers never mix with the grants of
	// the export's own workspace.
	Prefix = apisv1alpha1.MaximalPermissionPolicyRBACUserGroupPrefix
)

// BindingsFor returns the APIBindings of cluster whose status.boundResources
// list group/resource.
type BindingsFor func(cluster logicalcluster.Name, group, resource string) ([]*apisv1alpha2.APIBinding, error)

// ExportGetter returns the APIExport name of cluster, or nil when there is
// none.
type ExportGetter func(cluster logicalcluster.Name, name string) (*apisv1alpha2.APIExport, error)

// Authorizer is the maximal permission policy authorizer.
type Authorizer struct {
	bindingsFor BindingsFor
	getExport   ExportGetter
	// rbac judges a request in the logical cluster of its context.
	rbac authorizer.Authorizer
}

// New returns the authorizer. rbac must evaluate RBAC in the logical
// cluster carried by the context it is called with (clusterrbac does): the
// authorizer calls it with the export's cluster.
func New(bindingsFor BindingsFor, getExport ExportGetter, rbac authorizer.Authorizer) *Authorizer {
	return &Authorizer{bindingsFor: bindingsFor, getExport: getExport, rbac: rbac}
}

// Authorize denies requests to bound resources that the maximal permission
// policy of their export does not allow, and has no opinion otherwise.
// Whatever keeps it from deciding (an export that cannot be found, a lookup
// error) denies: a policy that cannot be read is not a policy that allows.
func (a *Authorizer) Authorize(ctx context.Context, attr authorizer.Attributes) (authorizer.Decision, string, error) {
	if !attr.IsResourceRequest() || attr.GetUser() == nil {
		return authorizer.DecisionNoOpinion, "", nil
	}
	cluster, ok := logicalcluster.ClusterFromContext(ctx)
	if !ok || cluster.IsWildcard() {
		return authorizer.DecisionNoOpinion, "", nil
	}
	bindings, err := a.bindingsFor(cluster, attr.GetAPIGroup(), attr.GetResource())
	if err != nil {
		return authorizer.DecisionDeny, "the APIBindings of this workspace cannot be read", fmt.Errorf("maximal permission policy: list APIBindings of %s: %w", cluster, err)
	}
	for _, b := range bindings {
		if d, reason, err := a.authorizeBinding(ctx, attr, cluster, b); d != authorizer.DecisionNoOpinion || err != nil {
			return d, reason, err
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// authorizeBinding applies the policy of the export that b binds: Deny, or
// NoOpinion when the policy allows or there is none.
func (a *Authorizer) authorizeBinding(ctx context.Context, attr authorizer.Attributes, cluster logicalcluster.Name, b *apisv1alpha2.APIBinding) (authorizer.Decision, string, error) {
	resource := resourceName(attr)
	exportCluster := logicalcluster.Name(b.Status.APIExportClusterName)
	if exportCluster == "" || b.Spec.Reference.Export == nil {
		return authorizer.DecisionDeny, fmt.Sprintf("%s is bound by APIBinding %s, whose APIExport is not resolved", resource, b.Name), nil
	}
	exportName := b.Spec.Reference.Export.Name
	export, err := a.getExport(exportCluster, exportName)
	if err != nil {
		return authorizer.DecisionDeny, fmt.Sprintf("APIExport %s:%s of %s cannot be read", exportCluster, exportName, resource),
			fmt.Errorf("maximal permission policy: get APIExport %s:%s: %w", exportCluster, exportName, err)
	}
	if export == nil {
		return authorizer.DecisionDeny, fmt.Sprintf("APIExport %s:%s of %s (APIBinding %s) not found", exportCluster, exportName, resource, b.Name), nil
	}
	if export.Spec.MaximalPermissionPolicy == nil || export.Spec.MaximalPermissionPolicy.Local == nil {
		return authorizer.DecisionNoOpinion, "", nil
	}
	d, rbacReason, err := a.rbac.Authorize(logicalcluster.WithCluster(ctx, exportCluster), PrefixedAttributes(attr, cluster))
	if d == authorizer.DecisionAllow {
		return authorizer.DecisionNoOpinion, "", nil
	}
	reason := fmt.Sprintf("%s is limited by the maximal permission policy of APIExport %s:%s, which does not allow this request", resource, exportCluster, exportName)
	if rbacReason != "" {
		reason += " (" + rbacReason + ")"
	}
	if err != nil {
		err = fmt.Errorf("maximal permission policy of APIExport %s:%s: %w", exportCluster, exportName, err)
	}
	return authorizer.DecisionDeny, reason, err
}

// resourceName is resource[/subresource].group as a user reads it.
func resourceName(attr authorizer.Attributes) string {
	r := attr.GetResource()
	if attr.GetSubresource() != "" {
		r += "/" + attr.GetSubresource()
	}
	if attr.GetAPIGroup() != "" {
		r += "." + attr.GetAPIGroup()
	}
	return r
}

// PrefixedAttributes returns attr with its user replaced by PrefixedUser:
// the request as the export's policy judges it.
func PrefixedAttributes(attr authorizer.Attributes, cluster logicalcluster.Name) authorizer.AttributesRecord {
	fieldSelector, fieldSelectorErr := attr.GetFieldSelector()
	labelSelector, labelSelectorErr := attr.GetLabelSelector()
	return authorizer.AttributesRecord{
		User:                      PrefixedUser(attr.GetUser(), cluster),
		Verb:                      attr.GetVerb(),
		Namespace:                 attr.GetNamespace(),
		APIGroup:                  attr.GetAPIGroup(),
		APIVersion:                attr.GetAPIVersion(),
		Resource:                  attr.GetResource(),
		Subresource:               attr.GetSubresource(),
		Name:                      attr.GetName(),
		ResourceRequest:           attr.IsResourceRequest(),
		Path:                      attr.GetPath(),
		FieldSelectorRequirements: fieldSelector,
		FieldSelectorParsingErr:   fieldSelectorErr,
		LabelSelectorRequirements: labelSelector,
		LabelSelectorParsingErr:   labelSelectorErr,
	}
}

// PrefixedUser is u as the maximal permission policy of an export sees it
// when u makes a request in cluster: name and groups carry Prefix. A service
// account is named with its logical cluster,
// Prefix+"system:kcp:serviceaccount:<cluster>:<namespace>:<name>" (one
// without a cluster, as named in a SubjectAccessReview, is of cluster).
// Warrants are left out: the chain judges each warrant on its own.
func PrefixedUser(u user.Info, cluster logicalcluster.Name) user.Info {
	name := u.GetName()
	if scope.IsServiceAccount(u) {
		home, ok := scope.ServiceAccountCluster(u)
		if !ok {
			home = cluster
		}
		name = scope.GlobalServiceAccountName(home, name)
	}
	groups := make([]string, 0, len(u.GetGroups()))
	for _, g := range u.GetGroups() {
		groups = append(groups, Prefix+g)
	}
	var extra map[string][]string
	for k, v := range u.GetExtra() {
		if k == scope.WarrantExtraKey {
			continue
		}
		if extra == nil {
			extra = map[string][]string{}
		}
		extra[k] = v
	}
	return &user.DefaultInfo{Name: Prefix + name, UID: u.GetUID(), Groups: groups, Extra: extra}
}

// ConditionsAwareAuthorize converts the unconditional decision.
func (a *Authorizer) ConditionsAwareAuthorize(ctx context.Context, attr authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attr))
}

// EvaluateConditions is not supported.
func (a *Authorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}
