package v1alpha2

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func requireField(t *testing.T, errs field.ErrorList, path, what string) {
	t.Helper()
	if len(errs) != 1 || errs[0].Field != path {
		t.Errorf("%s: errors %v, want one on %s", what, errs, path)
	}
}

func validExport() *APIExport {
	e := &APIExport{
		ObjectMeta: metav1.ObjectMeta{Name: "tenancy.kcp.io", ResourceVersion: "1"},
		Spec: APIExportSpec{
			Resources:        []ResourceSchema{{Name: "widgets", Group: "example.io", Schema: "v1.widgets.example.io"}},
			PermissionClaims: []PermissionClaim{{GroupResource: GroupResource{Resource: "configmaps"}, Verbs: []string{"get"}}},
		},
	}
	SetObjectDefaults_APIExport(e)
	SetDefaultIdentity(e)
	return e
}

func TestDefaults(t *testing.T) {
	e := validExport()
	if e.Spec.Resources[0].Storage.CRD == nil {
		t.Errorf("storage = %+v, want crd", e.Spec.Resources[0].Storage)
	}
	if r := e.Spec.Identity.SecretRef; *r != (SecretReference{Namespace: "kcp-system", Name: "tenancy.kcp.io"}) {
		t.Errorf("identity = %+v, want the default secret", r)
	}
	custom := &APIExport{ObjectMeta: metav1.ObjectMeta{Name: "e"}, Spec: APIExportSpec{Identity: &Identity{SecretRef: &SecretReference{Namespace: "x", Name: "y"}}}}
	SetDefaultIdentity(custom)
	if custom.Spec.Identity.SecretRef.Name != "y" {
		t.Errorf("default overwrote the identity: %+v", custom.Spec.Identity)
	}
}

func TestValidateAPIExport(t *testing.T) {
	if errs := ValidateAPIExport(validExport()); len(errs) != 0 {
		t.Fatalf("valid export: %v", errs)
	}
	for what, tc := range map[string]struct {
		mutate func(*APIExport)
		field  string
	}{
		"schema of another resource": {func(e *APIExport) { e.Spec.Resources[0].Schema = "v1.gadgets.example.io" }, "spec.resources[0].schema"},
		"schema not a schema name":   {func(e *APIExport) { e.Spec.Resources[0].Schema = "widgets" }, "spec.resources[0].schema"},
		"both storages": {func(e *APIExport) {
			e.Spec.Resources[0].Storage.Virtual = &ResourceSchemaStorageVirtual{Reference: TypedLocalObjectReference{Kind: "K", Name: "n"}}
		}, "spec.resources[0].storage"},
		"duplicate resource":  {func(e *APIExport) { e.Spec.Resources = append(e.Spec.Resources, e.Spec.Resources[0]) }, "spec.resources[1]"},
		"claim without verbs": {func(e *APIExport) { e.Spec.PermissionClaims[0].Verbs = nil }, "spec.permissionClaims[0].verbs"},
		"claim bad resource":  {func(e *APIExport) { e.Spec.PermissionClaims[0].Resource = "Config Maps" }, "spec.permissionClaims[0].resource"},
		"claim bad identity":  {func(e *APIExport) { e.Spec.PermissionClaims[0].IdentityHash = "not-hex" }, "spec.permissionClaims[0].identityHash"},
		"bad secret name":     {func(e *APIExport) { e.Spec.Identity.SecretRef.Name = "Bad_Name" }, "spec.identity.secretRef.name"},
	} {
		e := validExport()
		tc.mutate(e)
		requireField(t, ValidateAPIExport(e), tc.field, what)
	}
}

func TestIdentityHashIsImmutableOnceSet(t *testing.T) {
	old := validExport()
	set := old.DeepCopy()
	set.Status.IdentityHash = "abcd"
	if errs := ValidateAPIExportStatusUpdate(set, old); len(errs) != 0 {
		t.Errorf("setting the hash: %v", errs)
	}
	changed := set.DeepCopy()
	changed.Status.IdentityHash = "ef01"
	requireField(t, ValidateAPIExportStatusUpdate(changed, set), "status.identityHash", "changing the hash")
	cleared := set.DeepCopy()
	cleared.Status.IdentityHash = ""
	requireField(t, ValidateAPIExportStatusUpdate(cleared, set), "status.identityHash", "clearing the hash")
}

func validBinding() *APIBinding {
	return &APIBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "b", ResourceVersion: "1"},
		Spec: APIBindingSpec{
			Reference: BindingReference{Export: &ExportBindingReference{Path: "root:org", Name: "e"}},
			PermissionClaims: []AcceptablePermissionClaim{{
				ScopedPermissionClaim: ScopedPermissionClaim{PermissionClaim: PermissionClaim{GroupResource: GroupResource{Resource: "configmaps"}, Verbs: []string{"*"}}, Selector: PermissionClaimSelector{MatchAll: true}},
				State:                 ClaimAccepted,
			}},
		},
	}
}

func TestValidateAPIBinding(t *testing.T) {
	if errs := ValidateAPIBinding(validBinding()); len(errs) != 0 {
		t.Fatalf("valid binding: %v", errs)
	}
	for what, tc := range map[string]struct {
		mutate func(*APIBinding)
		field  string
	}{
		"no reference":   {func(b *APIBinding) { b.Spec.Reference.Export = nil }, "spec.reference.export"},
		"no export":      {func(b *APIBinding) { b.Spec.Reference.Export.Name = "" }, "spec.reference.export.name"},
		"bad path":       {func(b *APIBinding) { b.Spec.Reference.Export.Path = "a::b" }, "spec.reference.export.path"},
		"bad state":      {func(b *APIBinding) { b.Spec.PermissionClaims[0].State = "Maybe" }, "spec.permissionClaims[0].state"},
		"empty selector": {func(b *APIBinding) { b.Spec.PermissionClaims[0].Selector.MatchAll = false }, "spec.permissionClaims[0].selector"},
		"bad phase":      {func(b *APIBinding) { b.Status.Phase = "Done" }, "status.phase"},
	} {
		b := validBinding()
		tc.mutate(b)
		requireField(t, ValidateAPIBinding(b), tc.field, what)
	}
	rebound := validBinding()
	rebound.Spec.Reference.Export.Name = "other"
	requireField(t, ValidateAPIBindingUpdate(rebound, validBinding()), "spec.reference", "rebinding")
}

// TestBindingAcceptingAnUnknownIdentityIsAdmitted mirrors kcp: the wrong
// identity is reported by the APIBinding controller, not refused.
func TestBindingAcceptingAnUnknownIdentityIsAdmitted(t *testing.T) {
	b := &APIBinding{}
	b.Name = "cowboys"
	b.Spec.Reference.Export = &ExportBindingReference{Path: "root:org", Name: "today-cowboys"}
	b.Spec.PermissionClaims = []AcceptablePermissionClaim{{
		ScopedPermissionClaim: ScopedPermissionClaim{
			PermissionClaim: PermissionClaim{GroupResource: GroupResource{Group: "wild.wild.west", Resource: "sheriffs"}, Verbs: []string{"*"}, IdentityHash: "xxxxxxx"},
			Selector:        PermissionClaimSelector{MatchAll: true},
		},
		State: ClaimAccepted,
	}}
	if errs := ValidateAPIBinding(b); len(errs) != 0 {
		t.Fatalf("binding refused: %v", errs)
	}
}
