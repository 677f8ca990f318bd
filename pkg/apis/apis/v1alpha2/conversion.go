package v1alpha2

import (
	"encoding/json"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
)

// Annotations that carry, through a version that cannot express it, what
// the other version holds, so that v1alpha1 → v1alpha2 → v1alpha1 and
// v1alpha2 → v1alpha1 → v1alpha2 give back the object they started from.
// The names are kcp's.
const (
	// ResourceSchemasAnnotation (on v1alpha1 APIExports) holds the
	// spec.resources entries that latestResourceSchemas cannot express, with
	// their index.
	ResourceSchemasAnnotation = "apis.v1alpha2.kcp.io/resource-schemas"
	// PermissionClaimsAnnotation (on v1alpha1 APIExports) holds the v1alpha2
	// claims with verbs other than ["*"] or a defaultSelector.
	PermissionClaimsAnnotation = "apis.v1alpha2.kcp.io/permission-claims"
	// PermissionClaimsV1Alpha1Annotation (on v1alpha2 objects) holds the
	// v1alpha1 claims with all or resourceSelector set.
	PermissionClaimsV1Alpha1Annotation = "apis.v1alpha2.kcp.io/v1alpha1-permission-claims"
	// AcceptablePermissionClaimsAnnotation (on v1alpha1 APIBindings) holds
	// the spec claims with verbs, defaultSelector or label selectors.
	AcceptablePermissionClaimsAnnotation = "apis.v1alpha2.kcp.io/acceptable-permission-claims"
	// StatusPermissionClaimsAnnotation (on v1alpha1 APIBindings) holds
	// status.exportPermissionClaims that v1alpha1 cannot express.
	StatusPermissionClaimsAnnotation = "apis.v1alpha2.kcp.io/status-export-permission-claims"
	// StatusAppliedClaimsAnnotation (on v1alpha1 APIBindings) holds
	// status.appliedPermissionClaims that v1alpha1 cannot express.
	StatusAppliedClaimsAnnotation = "apis.v1alpha2.kcp.io/status-applied-permission-claims"
	// StatusPermissionClaimsV1Alpha1Annotation (on v1alpha2 APIBindings)
	// holds v1alpha1 status.exportPermissionClaims with all or
	// resourceSelector set.
	StatusPermissionClaimsV1Alpha1Annotation = "apis.v1alpha2.kcp.io/v1alpha1-status-export-permission-claims"
	// StatusAppliedClaimsV1Alpha1Annotation (on v1alpha2 APIBindings) holds
	// v1alpha1 status.appliedPermissionClaims with a resourceSelector.
	StatusAppliedClaimsV1Alpha1Annotation = "apis.v1alpha2.kcp.io/v1alpha1-status-applied-permission-claims"
)

// RegisterConversions adds the conversions between v1alpha1 and v1alpha2
// APIExports and APIBindings (and their lists) to s.
func RegisterConversions(s *runtime.Scheme) error {
	funcs := []struct {
		a, b any
		fn   conversion.ConversionFunc
	}{
		{(*APIExport)(nil), (*apisv1alpha1.APIExport)(nil), func(a, b any, _ conversion.Scope) error {
			return ConvertAPIExportToV1alpha1(a.(*APIExport), b.(*apisv1alpha1.APIExport))
		}},
		{(*apisv1alpha1.APIExport)(nil), (*APIExport)(nil), func(a, b any, _ conversion.Scope) error {
			return ConvertAPIExportFromV1alpha1(a.(*apisv1alpha1.APIExport), b.(*APIExport))
		}},
		{(*APIExportList)(nil), (*apisv1alpha1.APIExportList)(nil), func(a, b any, _ conversion.Scope) error {
			in, out := a.(*APIExportList), b.(*apisv1alpha1.APIExportList)
			out.ListMeta = in.ListMeta
			out.Items = make([]apisv1alpha1.APIExport, len(in.Items))
			for i := range in.Items {
				if err := ConvertAPIExportToV1alpha1(&in.Items[i], &out.Items[i]); err != nil {
					return err
				}
			}
			return nil
		}},
		{(*apisv1alpha1.APIExportList)(nil), (*APIExportList)(nil), func(a, b any, _ conversion.Scope) error {
			in, out := a.(*apisv1alpha1.APIExportList), b.(*APIExportList)
			out.ListMeta = in.ListMeta
			out.Items = make([]APIExport, len(in.Items))
			for i := range in.Items {
				if err := ConvertAPIExportFromV1alpha1(&in.Items[i], &out.Items[i]); err != nil {
					return err
				}
			}
			return nil
		}},
		{(*APIBinding)(nil), (*apisv1alpha1.APIBinding)(nil), func(a, b any, _ conversion.Scope) error {
			return ConvertAPIBindingToV1alpha1(a.(*APIBinding), b.(*apisv1alpha1.APIBinding))
		}},
		{(*apisv1alpha1.APIBinding)(nil), (*APIBinding)(nil), func(a, b any, _ conversion.Scope) error {
			return ConvertAPIBindingFromV1alpha1(a.(*apisv1alpha1.APIBinding), b.(*APIBinding))
		}},
		{(*APIBindingList)(nil), (*apisv1alpha1.APIBindingList)(nil), func(a, b any, _ conversion.Scope) error {
			in, out := a.(*APIBindingList), b.(*apisv1alpha1.APIBindingList)
			out.ListMeta = in.ListMeta
			out.Items = make([]apisv1alpha1.APIBinding, len(in.Items))
			for i := range in.Items {
				if err := ConvertAPIBindingToV1alpha1(&in.Items[i], &out.Items[i]); err != nil {
					return err
				}
			}
			return nil
		}},
		{(*apisv1alpha1.APIBindingList)(nil), (*APIBindingList)(nil), func(a, b any, _ conversion.Scope) error {
			in, out := a.(*apisv1alpha1.APIBindingList), b.(*APIBindingList)
			out.ListMeta = in.ListMeta
			out.Items = make([]APIBinding, len(in.Items))
			for i := range in.Items {
				if err := ConvertAPIBindingFromV1alpha1(&in.Items[i], &out.Items[i]); err != nil {
					return err
				}
			}
			return nil
		}},
	}
	for _, f := range funcs {
		if err := s.AddConversionFunc(f.a, f.b, f.fn); err != nil {
			return err
		}
	}
	return nil
}

// overhangingResourceSchema is a spec.resources entry that v1alpha1 cannot
// express, with its position, so that it goes back where it was.
//
// +k8s:openapi-gen=false
type overhangingResourceSchema struct {
	ResourceSchema `json:",inline"`
	Index          *int `json:"index,omitempty"`
}

// ConvertAPIExportToV1alpha1 converts a v1alpha2 APIExport to v1alpha1
// without loss: what v1alpha1 cannot express goes into annotations.
func ConvertAPIExportToV1alpha1(in *APIExport, out *apisv1alpha1.APIExport) error {
	out.TypeMeta = in.TypeMeta
	out.ObjectMeta = *in.ObjectMeta.DeepCopy()
	v1Claims := unstash[apisv1alpha1.PermissionClaim](&out.ObjectMeta, PermissionClaimsV1Alpha1Annotation)

	out.Spec = apisv1alpha1.APIExportSpec{
		Identity:                identityToV1alpha1(in.Spec.Identity),
		MaximalPermissionPolicy: policyToV1alpha1(in.Spec.MaximalPermissionPolicy),
	}
	var overhangingSchemas []overhangingResourceSchema
	for i, r := range in.Spec.Resources {
		if name, group, ok := ParseSchemaName(r.Schema); ok && name == r.Name && group == r.Group && r.Storage.CRD != nil && r.Storage.Virtual == nil {
			out.Spec.LatestResourceSchemas = append(out.Spec.LatestResourceSchemas, r.Schema)
			continue
		}
		overhangingSchemas = append(overhangingSchemas, overhangingResourceSchema{ResourceSchema: *r.DeepCopy(), Index: &i})
	}
	var overhangingClaims []PermissionClaim
	for _, c := range in.Spec.PermissionClaims {
		oc := apisv1alpha1.PermissionClaim{GroupResource: apisv1alpha1.GroupResource(c.GroupResource), IdentityHash: c.IdentityHash}
		if o, ok := findV1alpha1(v1Claims, oc); ok {
			oc.All, oc.ResourceSelector = o.All, o.ResourceSelector
		}
		if !claimFitsV1alpha1(c) {
			overhangingClaims = append(overhangingClaims, *c.DeepCopy())
		}
		out.Spec.PermissionClaims = append(out.Spec.PermissionClaims, oc)
	}
	stash(&out.ObjectMeta, ResourceSchemasAnnotation, overhangingSchemas)
	stash(&out.ObjectMeta, PermissionClaimsAnnotation, overhangingClaims)

	out.Status = apisv1alpha1.APIExportStatus{IdentityHash: in.Status.IdentityHash, Conditions: in.Status.Conditions.DeepCopy()}
	for _, vw := range in.Status.VirtualWorkspaces {
		out.Status.VirtualWorkspaces = append(out.Status.VirtualWorkspaces, apisv1alpha1.VirtualWorkspace(vw))
	}
	return nil
}

// ConvertAPIExportFromV1alpha1 converts a v1alpha1 APIExport to v1alpha2,
// restoring what an earlier conversion to v1alpha1 kept in annotations.
func ConvertAPIExportFromV1alpha1(in *apisv1alpha1.APIExport, out *APIExport) error {
	out.TypeMeta = in.TypeMeta
	out.ObjectMeta = *in.ObjectMeta.DeepCopy()
	v2Claims := unstash[PermissionClaim](&out.ObjectMeta, PermissionClaimsAnnotation)
	overhangingSchemas := unstash[overhangingResourceSchema](&out.ObjectMeta, ResourceSchemasAnnotation)

	out.Spec = APIExportSpec{
		Identity:                identityFromV1alpha1(in.Spec.Identity),
		MaximalPermissionPolicy: policyFromV1alpha1(in.Spec.MaximalPermissionPolicy),
	}
	for _, s := range in.Spec.LatestResourceSchemas {
		name, group, _ := ParseSchemaName(s)
		out.Spec.Resources = append(out.Spec.Resources, ResourceSchema{Name: name, Group: group, Schema: s, Storage: ResourceSchemaStorage{CRD: &ResourceSchemaStorageCRD{}}})
	}
	for _, o := range overhangingSchemas {
		if o.Index != nil && *o.Index >= 0 && *o.Index <= len(out.Spec.Resources) {
			out.Spec.Resources = slices.Insert(out.Spec.Resources, *o.Index, o.ResourceSchema)
			continue
		}
		out.Spec.Resources = append(out.Spec.Resources, o.ResourceSchema)
	}
	var overhangingClaims []apisv1alpha1.PermissionClaim
	for _, c := range in.Spec.PermissionClaims {
		oc := PermissionClaim{GroupResource: GroupResource(c.GroupResource), IdentityHash: c.IdentityHash, Verbs: []string{"*"}}
		if o, ok := findV1alpha2(v2Claims, oc); ok {
			oc.Verbs, oc.DefaultSelector = o.Verbs, o.DefaultSelector
		}
		if c.All || len(c.ResourceSelector) > 0 {
			overhangingClaims = append(overhangingClaims, *c.DeepCopy())
		}
		out.Spec.PermissionClaims = append(out.Spec.PermissionClaims, oc)
	}
	stash(&out.ObjectMeta, PermissionClaimsV1Alpha1Annotation, overhangingClaims)

	out.Status = APIExportStatus{IdentityHash: in.Status.IdentityHash, Conditions: in.Status.Conditions.DeepCopy()}
	for _, vw := range in.Status.VirtualWorkspaces {
		out.Status.VirtualWorkspaces = append(out.Status.VirtualWorkspaces, VirtualWorkspace(vw))
	}
	return nil
}

// ConvertAPIBindingToV1alpha1 converts a v1alpha2 APIBinding to v1alpha1
// without loss: what v1alpha1 cannot express goes into annotations.
func ConvertAPIBindingToV1alpha1(in *APIBinding, out *apisv1alpha1.APIBinding) error {
	out.TypeMeta = in.TypeMeta
	out.ObjectMeta = *in.ObjectMeta.DeepCopy()
	v1Spec := unstash[apisv1alpha1.AcceptablePermissionClaim](&out.ObjectMeta, PermissionClaimsV1Alpha1Annotation)
	v1Export := unstash[apisv1alpha1.PermissionClaim](&out.ObjectMeta, StatusPermissionClaimsV1Alpha1Annotation)
	v1Applied := unstash[apisv1alpha1.PermissionClaim](&out.ObjectMeta, StatusAppliedClaimsV1Alpha1Annotation)

	out.Spec = apisv1alpha1.APIBindingSpec{}
	if e := in.Spec.Reference.Export; e != nil {
		out.Spec.Reference.Export = &apisv1alpha1.ExportBindingReference{Path: e.Path, Name: e.Name}
	}
	var overhangingSpec []AcceptablePermissionClaim
	for _, c := range in.Spec.PermissionClaims {
		oc := apisv1alpha1.AcceptablePermissionClaim{PermissionClaim: scopedToV1alpha1(c.ScopedPermissionClaim), State: apisv1alpha1.AcceptablePermissionClaimState(c.State)}
		for _, o := range v1Spec {
			if o.EqualGRI(oc.PermissionClaim) {
				oc.ResourceSelector = o.ResourceSelector
			}
		}
		if !scopedFitsV1alpha1(c.ScopedPermissionClaim) {
			overhangingSpec = append(overhangingSpec, *c.DeepCopy())
		}
		out.Spec.PermissionClaims = append(out.Spec.PermissionClaims, oc)
	}

	out.Status = apisv1alpha1.APIBindingStatus{
		APIExportClusterName: in.Status.APIExportClusterName,
		Phase:                apisv1alpha1.APIBindingPhaseType(in.Status.Phase),
		Conditions:           in.Status.Conditions.DeepCopy(),
	}
	for _, r := range in.Status.BoundResources {
		out.Status.BoundResources = append(out.Status.BoundResources, apisv1alpha1.BoundAPIResource{
			Group: r.Group, Resource: r.Resource, Schema: apisv1alpha1.BoundAPIResourceSchema(r.Schema), StorageVersions: slices.Clone(r.StorageVersions),
		})
	}
	var overhangingExport []PermissionClaim
	for _, c := range in.Status.ExportPermissionClaims {
		oc := apisv1alpha1.PermissionClaim{GroupResource: apisv1alpha1.GroupResource(c.GroupResource), IdentityHash: c.IdentityHash}
		if o, ok := findV1alpha1(v1Export, oc); ok {
			oc.All, oc.ResourceSelector = o.All, o.ResourceSelector
		}
		if !claimFitsV1alpha1(c) {
			overhangingExport = append(overhangingExport, *c.DeepCopy())
		}
		out.Status.ExportPermissionClaims = append(out.Status.ExportPermissionClaims, oc)
	}
	var overhangingApplied []ScopedPermissionClaim
	for _, c := range in.Status.AppliedPermissionClaims {
		oc := scopedToV1alpha1(c)
		if o, ok := findV1alpha1(v1Applied, oc); ok {
			oc.ResourceSelector = o.ResourceSelector
		}
		if !scopedFitsV1alpha1(c) {
			overhangingApplied = append(overhangingApplied, *c.DeepCopy())
		}
		out.Status.AppliedPermissionClaims = append(out.Status.AppliedPermissionClaims, oc)
	}
	stash(&out.ObjectMeta, AcceptablePermissionClaimsAnnotation, overhangingSpec)
	stash(&out.ObjectMeta, StatusPermissionClaimsAnnotation, overhangingExport)
	stash(&out.ObjectMeta, StatusAppliedClaimsAnnotation, overhangingApplied)
	return nil
}

// ConvertAPIBindingFromV1alpha1 converts a v1alpha1 APIBinding to
// v1alpha2, restoring what an earlier conversion to v1alpha1 kept in
// annotations.
func ConvertAPIBindingFromV1alpha1(in *apisv1alpha1.APIBinding, out *APIBinding) error {
	out.TypeMeta = in.TypeMeta
	out.ObjectMeta = *in.ObjectMeta.DeepCopy()
	v2Spec := unstash[AcceptablePermissionClaim](&out.ObjectMeta, AcceptablePermissionClaimsAnnotation)
	v2Export := unstash[PermissionClaim](&out.ObjectMeta, StatusPermissionClaimsAnnotation)
	v2Applied := unstash[ScopedPermissionClaim](&out.ObjectMeta, StatusAppliedClaimsAnnotation)

	out.Spec = APIBindingSpec{}
	if e := in.Spec.Reference.Export; e != nil {
		out.Spec.Reference.Export = &ExportBindingReference{Path: e.Path, Name: e.Name}
	}
	var overhangingSpec []apisv1alpha1.AcceptablePermissionClaim
	for _, c := range in.Spec.PermissionClaims {
		oc := AcceptablePermissionClaim{ScopedPermissionClaim: scopedFromV1alpha1(c.PermissionClaim), State: AcceptablePermissionClaimState(c.State)}
		for _, o := range v2Spec {
			if o.EqualGRI(oc.PermissionClaim) {
				restoreScoped(&oc.ScopedPermissionClaim, o.ScopedPermissionClaim)
			}
		}
		if len(c.ResourceSelector) > 0 {
			overhangingSpec = append(overhangingSpec, *c.DeepCopy())
		}
		out.Spec.PermissionClaims = append(out.Spec.PermissionClaims, oc)
	}

	out.Status = APIBindingStatus{
		APIExportClusterName: in.Status.APIExportClusterName,
		Phase:                APIBindingPhaseType(in.Status.Phase),
		Conditions:           in.Status.Conditions.DeepCopy(),
	}
	for _, r := range in.Status.BoundResources {
		out.Status.BoundResources = append(out.Status.BoundResources, BoundAPIResource{
			Group: r.Group, Resource: r.Resource, Schema: BoundAPIResourceSchema(r.Schema), StorageVersions: slices.Clone(r.StorageVersions),
		})
	}
	var overhangingExport []apisv1alpha1.PermissionClaim
	for _, c := range in.Status.ExportPermissionClaims {
		oc := PermissionClaim{GroupResource: GroupResource(c.GroupResource), IdentityHash: c.IdentityHash, Verbs: []string{"*"}}
		if o, ok := findV1alpha2(v2Export, oc); ok {
			oc.Verbs, oc.DefaultSelector = o.Verbs, o.DefaultSelector
		}
		if c.All || len(c.ResourceSelector) > 0 {
			overhangingExport = append(overhangingExport, *c.DeepCopy())
		}
		out.Status.ExportPermissionClaims = append(out.Status.ExportPermissionClaims, oc)
	}
	var overhangingApplied []apisv1alpha1.PermissionClaim
	for _, c := range in.Status.AppliedPermissionClaims {
		oc := scopedFromV1alpha1(c)
		for _, o := range v2Applied {
			if o.EqualGRI(oc.PermissionClaim) {
				restoreScoped(&oc, o)
			}
		}
		if len(c.ResourceSelector) > 0 {
			overhangingApplied = append(overhangingApplied, *c.DeepCopy())
		}
		out.Status.AppliedPermissionClaims = append(out.Status.AppliedPermissionClaims, oc)
	}
	stash(&out.ObjectMeta, PermissionClaimsV1Alpha1Annotation, overhangingSpec)
	stash(&out.ObjectMeta, StatusPermissionClaimsV1Alpha1Annotation, overhangingExport)
	stash(&out.ObjectMeta, StatusAppliedClaimsV1Alpha1Annotation, overhangingApplied)
	return nil
}

// ParseSchemaName splits an APIResourceSchema name "<prefix>.<resource>.<group>"
// into resource and group; the group "core" is the core group.
func ParseSchemaName(schema string) (resource, group string, ok bool) {
	parts := strings.SplitN(schema, ".", 3)
	if len(parts) < 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", "", false
	}
	group = parts[2]
	if group == "core" {
		group = ""
	}
	return parts[1], group, true
}

func identityToV1alpha1(in *Identity) *apisv1alpha1.Identity {
	if in == nil {
		return nil
	}
	out := &apisv1alpha1.Identity{}
	if in.SecretRef != nil {
		out.SecretRef = &apisv1alpha1.SecretReference{Name: in.SecretRef.Name, Namespace: in.SecretRef.Namespace}
	}
	return out
}

func identityFromV1alpha1(in *apisv1alpha1.Identity) *Identity {
	if in == nil {
		return nil
	}
	out := &Identity{}
	if in.SecretRef != nil {
		out.SecretRef = &SecretReference{Name: in.SecretRef.Name, Namespace: in.SecretRef.Namespace}
	}
	return out
}

func policyToV1alpha1(in *MaximalPermissionPolicy) *apisv1alpha1.MaximalPermissionPolicy {
	if in == nil {
		return nil
	}
	out := &apisv1alpha1.MaximalPermissionPolicy{}
	if in.Local != nil {
		out.Local = &apisv1alpha1.LocalAPIExportPolicy{}
	}
	return out
}

func policyFromV1alpha1(in *apisv1alpha1.MaximalPermissionPolicy) *MaximalPermissionPolicy {
	if in == nil {
		return nil
	}
	out := &MaximalPermissionPolicy{}
	if in.Local != nil {
		out.Local = &LocalAPIExportPolicy{}
	}
	return out
}

// claimFitsV1alpha1 tells whether v1alpha1 expresses a claim: all verbs and
// no default selector.
func claimFitsV1alpha1(c PermissionClaim) bool {
	return len(c.Verbs) == 1 && c.Verbs[0] == "*" && c.DefaultSelector == nil
}

// scopedFitsV1alpha1 tells whether v1alpha1 expresses a scoped claim: one
// that fits and selects with matchAll or nothing, never by labels.
func scopedFitsV1alpha1(c ScopedPermissionClaim) bool {
	return claimFitsV1alpha1(c.PermissionClaim) && len(c.Selector.MatchLabels) == 0 && c.Selector.MatchExpressions == nil
}

func scopedToV1alpha1(c ScopedPermissionClaim) apisv1alpha1.PermissionClaim {
	return apisv1alpha1.PermissionClaim{GroupResource: apisv1alpha1.GroupResource(c.GroupResource), IdentityHash: c.IdentityHash, All: c.Selector.MatchAll}
}

func scopedFromV1alpha1(c apisv1alpha1.PermissionClaim) ScopedPermissionClaim {
	return ScopedPermissionClaim{
		PermissionClaim: PermissionClaim{GroupResource: GroupResource(c.GroupResource), IdentityHash: c.IdentityHash, Verbs: []string{"*"}},
		Selector:        PermissionClaimSelector{MatchAll: c.All},
	}
}

// restoreScoped puts back into c what v1alpha1 could not hold of o; matchAll
// is v1alpha1's "all" and stays as c has it.
func restoreScoped(c *ScopedPermissionClaim, o ScopedPermissionClaim) {
	c.Verbs, c.DefaultSelector = o.Verbs, o.DefaultSelector
	matchAll := c.Selector.MatchAll
	c.Selector = o.Selector
	c.Selector.MatchAll = matchAll
}

func findV1alpha1(claims []apisv1alpha1.PermissionClaim, c apisv1alpha1.PermissionClaim) (apisv1alpha1.PermissionClaim, bool) {
	for _, o := range claims {
		if o.EqualGRI(c) {
			return o, true
		}
	}
	return apisv1alpha1.PermissionClaim{}, false
}

func findV1alpha2(claims []PermissionClaim, c PermissionClaim) (PermissionClaim, bool) {
	for _, o := range claims {
		if o.EqualGRI(c) {
			return o, true
		}
	}
	return PermissionClaim{}, false
}

// stash records items as JSON in the annotation key of meta, unless there
// are none.
func stash[T any](meta *metav1.ObjectMeta, key string, items []T) {
	if len(items) == 0 {
		return
	}
	encoded, err := json.Marshal(items)
	if err != nil {
		return // plain structs of strings and bools always encode
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[key] = string(encoded)
}

// unstash takes the items recorded by stash out of meta. An annotation that
// does not decode is left alone: it was not written by a conversion.
func unstash[T any](meta *metav1.ObjectMeta, key string) []T {
	value, ok := meta.Annotations[key]
	if !ok {
		return nil
	}
	var items []T
	if err := json.Unmarshal([]byte(value), &items); err != nil {
		return nil
	}
	delete(meta.Annotations, key)
	if len(meta.Annotations) == 0 {
		meta.Annotations = nil
	}
	return items
}
