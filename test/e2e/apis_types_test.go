package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/test/framework"
)

var (
	apiResourceSchemasGVR      = apisv1alpha1.SchemeGroupVersion.WithResource("apiresourceschemas")
	apiExportEndpointSlicesGVR = apisv1alpha1.SchemeGroupVersion.WithResource("apiexportendpointslices")
	apiExportsV1alpha1GVR      = apisv1alpha1.SchemeGroupVersion.WithResource("apiexports")
	apiExportsGVR              = apisv1alpha2.SchemeGroupVersion.WithResource("apiexports")
	apiBindingsV1alpha1GVR     = apisv1alpha1.SchemeGroupVersion.WithResource("apibindings")
	apiBindingsGVR             = apisv1alpha2.SchemeGroupVersion.WithResource("apibindings")
)

// widgetSchema is an APIResourceSchema of widgets.example.io.
func widgetSchema(name string) *apisv1alpha1.APIResourceSchema {
	return &apisv1alpha1.APIResourceSchema{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha1.SchemeGroupVersion.String(), Kind: "APIResourceSchema"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: apisv1alpha1.APIResourceSchemaSpec{
			Group: "example.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apisv1alpha1.APIResourceVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: runtime.RawExtension{Raw: []byte(`{"type":"object","properties":{"spec":{"type":"object","properties":{"size":{"type":"integer"}}}}}`)},
			}},
		},
	}
}

// waitForIdentity polls an export until its IdentityValid condition has
// the wanted status and returns it.
func waitForIdentity(t *testing.T, c *kcpREST, cluster, name string, want corev1.ConditionStatus) *apisv1alpha2.APIExport {
	t.Helper()
	var export *apisv1alpha2.APIExport
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		export = &apisv1alpha2.APIExport{}
		if err := c.get(ctx, cluster, apiExportsGVR, name, export); err != nil {
			return err
		}
		if cond := export.Status.Conditions.Get(apisv1alpha1.APIExportIdentityValid); cond == nil || cond.Status != want {
			return fmt.Errorf("status %+v", export.Status)
		}
		return nil
	}, "APIExport %s|%s: IdentityValid not %s", cluster, name, want)
	return export
}

func hexSHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestAPIsKindsAreServedAndExportsGetIdentities: apis.kcp.io is served in
// every workspace, each version saying the same thing; a schema cannot be
// rewritten under its exports; every export owns an identity that nobody
// can swap, and two exports are the same API exactly when they share a
// key. It all survives a restart.
func TestAPIsKindsAreServedAndExportsGetIdentities(t *testing.T) {
	t.Parallel()
	e := startWorkspaceShard(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	org := e.readyOrg(ctx, t, "apis")
	kcp := e.kcp(t, kcpAdmin)
	kube := e.kube(t, kcpAdmin, org.path())

	schemaName := "v1.widgets.example.io"
	if err := kcp.create(ctx, org.path(), apiResourceSchemasGVR, widgetSchema(schemaName), &apisv1alpha1.APIResourceSchema{}); err != nil {
		t.Fatalf("create APIResourceSchema: %v", err)
	}

	t.Run("SchemaSpecCannotBeRewrittenUnderItsExports", func(t *testing.T) {
		stored := &apisv1alpha1.APIResourceSchema{}
		if err := kcp.get(ctx, org.path(), apiResourceSchemasGVR, schemaName, stored); err != nil {
			t.Fatal(err)
		}
		if stored.Spec.NameValidation != apisv1alpha1.NameValidationDNS1123Subdomain {
			t.Errorf("nameValidation = %q, want the default %q", stored.Spec.NameValidation, apisv1alpha1.NameValidationDNS1123Subdomain)
		}
		rewritten := stored.DeepCopy()
		rewritten.Spec.Versions[0].Schema.Raw = []byte(`{"type":"object","x-kubernetes-preserve-unknown-fields":true}`)
		err := kcp.update(ctx, org.path(), apiResourceSchemasGVR, schemaName, rewritten, &apisv1alpha1.APIResourceSchema{})
		requireAPIError(t, err, 422, "rewrite the schema of "+schemaName, "immutable")
		labelled := stored.DeepCopy()
		labelled.Labels = map[string]string{"stage": "prod"}
		if err := kcp.update(ctx, org.path(), apiResourceSchemasGVR, schemaName, labelled, &apisv1alpha1.APIResourceSchema{}); err != nil {
			t.Errorf("label the schema: %v", err)
		}
		bad := widgetSchema("v1.gadgets.example.io")
		bad.Spec.Versions[0].Storage = false
		err = kcp.create(ctx, org.path(), apiResourceSchemasGVR, bad, &apisv1alpha1.APIResourceSchema{})
		requireAPIError(t, err, 422, "create a schema without storage version named after another resource", "storage version", "metadata.name")
	})

	// Created as v1alpha1, read as v1alpha2, written back as v1alpha1.
	legacy := &apisv1alpha1.APIExport{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha1.SchemeGroupVersion.String(), Kind: "APIExport"},
		ObjectMeta: metav1.ObjectMeta{Name: "widgets"},
		Spec: apisv1alpha1.APIExportSpec{
			LatestResourceSchemas: []string{schemaName},
			PermissionClaims: []apisv1alpha1.PermissionClaim{
				{GroupResource: apisv1alpha1.GroupResource{Resource: "configmaps"}, All: true},
				{GroupResource: apisv1alpha1.GroupResource{Resource: "secrets"}, ResourceSelector: []apisv1alpha1.ResourceSelector{{Namespace: "shared"}}},
			},
		},
	}
	t.Run("ExportSaysTheSameInBothVersions", func(t *testing.T) {
		if err := kcp.create(ctx, org.path(), apiExportsV1alpha1GVR, legacy, &apisv1alpha1.APIExport{}); err != nil {
			t.Fatalf("create APIExport as v1alpha1: %v", err)
		}
		v2 := &apisv1alpha2.APIExport{}
		if err := kcp.get(ctx, org.path(), apiExportsGVR, "widgets", v2); err != nil {
			t.Fatal(err)
		}
		wantResources := []apisv1alpha2.ResourceSchema{{Name: "widgets", Group: "example.io", Schema: schemaName, Storage: apisv1alpha2.ResourceSchemaStorage{CRD: &apisv1alpha2.ResourceSchemaStorageCRD{}}}}
		if !apiequality.Semantic.DeepEqual(v2.Spec.Resources, wantResources) {
			t.Errorf("v1alpha2 resources = %+v, want %+v", v2.Spec.Resources, wantResources)
		}
		if ref := v2.Spec.Identity; ref == nil || ref.SecretRef == nil || *ref.SecretRef != (apisv1alpha2.SecretReference{Namespace: "kcp-system", Name: "widgets"}) {
			t.Errorf("v1alpha2 identity = %+v, want the default secret kcp-system/widgets", ref)
		}
		for _, c := range v2.Spec.PermissionClaims {
			if !slices.Equal(c.Verbs, []string{"*"}) {
				t.Errorf("v1alpha2 claim %v: verbs %v, want [*]", c.GroupResource, c.Verbs)
			}
		}
		v1 := &apisv1alpha1.APIExport{}
		if err := kcp.get(ctx, org.path(), apiExportsV1alpha1GVR, "widgets", v1); err != nil {
			t.Fatal(err)
		}
		want := legacy.Spec.DeepCopy()
		want.Identity = &apisv1alpha1.Identity{SecretRef: &apisv1alpha1.SecretReference{Namespace: "kcp-system", Name: "widgets"}}
		if !apiequality.Semantic.DeepEqual(v1.Spec, *want) {
			t.Errorf("v1alpha1 spec read back = %+v, want %+v", v1.Spec, *want)
		}
		for k := range v1.Annotations {
			if strings.HasPrefix(k, "apis.v1alpha2.kcp.io/") {
				t.Errorf("v1alpha1 read shows conversion annotation %s", k)
			}
		}
	})

	t.Run("V1alpha1WriteKeepsWhatOnlyV1alpha2Says", func(t *testing.T) {
		modern := &apisv1alpha2.APIExport{
			TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport"},
			ObjectMeta: metav1.ObjectMeta{Name: "modern"},
			Spec: apisv1alpha2.APIExportSpec{
				Resources:        []apisv1alpha2.ResourceSchema{{Name: "widgets", Group: "example.io", Schema: schemaName}},
				PermissionClaims: []apisv1alpha2.PermissionClaim{{GroupResource: apisv1alpha2.GroupResource{Resource: "configmaps"}, Verbs: []string{"get", "list"}}},
			},
		}
		if err := kcp.create(ctx, org.path(), apiExportsGVR, modern, &apisv1alpha2.APIExport{}); err != nil {
			t.Fatalf("create APIExport as v1alpha2: %v", err)
		}
		v1 := &apisv1alpha1.APIExport{}
		if err := kcp.get(ctx, org.path(), apiExportsV1alpha1GVR, "modern", v1); err != nil {
			t.Fatal(err)
		}
		if v1.Annotations[apisv1alpha2.PermissionClaimsAnnotation] == "" {
			t.Errorf("v1alpha1 read has annotations %v, want the verbs kept in %s", v1.Annotations, apisv1alpha2.PermissionClaimsAnnotation)
		}
		// The identity controller writes the export's status meanwhile:
		// update what was last read, as any client does.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			latest := &apisv1alpha1.APIExport{}
			if err := kcp.get(ctx, org.path(), apiExportsV1alpha1GVR, "modern", latest); err != nil {
				return err
			}
			latest.Labels = map[string]string{"touched": "v1alpha1"}
			return kcp.update(ctx, org.path(), apiExportsV1alpha1GVR, "modern", latest, &apisv1alpha1.APIExport{})
		})
		if err != nil {
			t.Fatalf("update as v1alpha1: %v", err)
		}
		v2 := &apisv1alpha2.APIExport{}
		if err := kcp.get(ctx, org.path(), apiExportsGVR, "modern", v2); err != nil {
			t.Fatal(err)
		}
		if len(v2.Spec.PermissionClaims) != 1 || !slices.Equal(v2.Spec.PermissionClaims[0].Verbs, []string{"get", "list"}) {
			t.Errorf("claims after a v1alpha1 update = %+v, want verbs [get list] kept", v2.Spec.PermissionClaims)
		}
		if v2.Labels["touched"] != "v1alpha1" {
			t.Errorf("labels after a v1alpha1 update: %v", v2.Labels)
		}
		for k := range v2.Annotations {
			if strings.HasPrefix(k, "apis.v1alpha2.kcp.io/") {
				t.Errorf("v1alpha2 read shows conversion annotation %s", k)
			}
		}
	})

	var widgetsHash string
	t.Run("ExportGetsIdentityNobodyCanSwap", func(t *testing.T) {
		export := waitForIdentity(t, kcp, org.path(), "widgets", corev1.ConditionTrue)
		secret, err := kube.CoreV1().Secrets("kcp-system").Get(ctx, "widgets", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("identity secret kcp-system/widgets: %v", err)
		}
		widgetsHash = hexSHA256(secret.Data["key"])
		if len(secret.Data["key"]) == 0 || export.Status.IdentityHash != widgetsHash {
			t.Fatalf("identityHash = %q, want sha256 of the secret's key %q", export.Status.IdentityHash, widgetsHash)
		}
		// The owner swaps the key: the identity stays, the export says so.
		originalKey := secret.Data["key"]
		secret.Data["key"] = []byte("stolen-identity")
		if _, err := kube.CoreV1().Secrets("kcp-system").Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		// Nor can anyone but the system rewrite the hash through the status:
		// kcp's system CRD authorizer refuses kcp-admin too.
		err = kcp.patchStatus(ctx, org.path(), apiExportsGVR, "widgets", `{"status":{"identityHash":"`+hexSHA256([]byte("other"))+`"}}`)
		requireAPIError(t, err, 403, "kcp-admin rewrites status.identityHash", "status update not permitted")
		// Touch the export so that it is reconciled now; its controller may
		// write the status meanwhile.
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			touched := &apisv1alpha2.APIExport{}
			if err := kcp.get(ctx, org.path(), apiExportsGVR, "widgets", touched); err != nil {
				return err
			}
			touched.Labels = map[string]string{"touch": "1"}
			return kcp.update(ctx, org.path(), apiExportsGVR, "widgets", touched, &apisv1alpha2.APIExport{})
		}); err != nil {
			t.Fatal(err)
		}
		export = waitForIdentity(t, kcp, org.path(), "widgets", corev1.ConditionFalse)
		if export.Status.IdentityHash != widgetsHash {
			t.Errorf("identityHash changed to %q after the key was swapped", export.Status.IdentityHash)
		}
		if c := export.Status.Conditions.Get(apisv1alpha1.APIExportIdentityValid); c.Reason != apisv1alpha1.IdentityVerificationFailedReason {
			t.Errorf("IdentityValid reason %q, want %q", c.Reason, apisv1alpha1.IdentityVerificationFailedReason)
		}
		// Putting the key back heals it.
		secret, err = kube.CoreV1().Secrets("kcp-system").Get(ctx, "widgets", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		secret.Data["key"] = originalKey
		if _, err := kube.CoreV1().Secrets("kcp-system").Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitForIdentity(t, kcp, org.path(), "widgets", corev1.ConditionTrue)
	})

	t.Run("SameKeyIsTheSameAPIAndAnotherKeyIsNot", func(t *testing.T) {
		shared, err := kube.CoreV1().Secrets("kcp-system").Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "shared-identity"},
			Data:       map[string][]byte{"key": []byte("a shared identity key")},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"same-a", "same-b"} {
			export := &apisv1alpha2.APIExport{
				TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport"},
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: apisv1alpha2.APIExportSpec{
					Resources: []apisv1alpha2.ResourceSchema{{Name: "widgets", Group: "example.io", Schema: schemaName}},
					Identity:  &apisv1alpha2.Identity{SecretRef: &apisv1alpha2.SecretReference{Namespace: "kcp-system", Name: shared.Name}},
				},
			}
			if err := kcp.create(ctx, org.path(), apiExportsGVR, export, &apisv1alpha2.APIExport{}); err != nil {
				t.Fatal(err)
			}
		}
		a := waitForIdentity(t, kcp, org.path(), "same-a", corev1.ConditionTrue)
		b := waitForIdentity(t, kcp, org.path(), "same-b", corev1.ConditionTrue)
		modern := waitForIdentity(t, kcp, org.path(), "modern", corev1.ConditionTrue)
		if a.Status.IdentityHash != hexSHA256(shared.Data["key"]) || a.Status.IdentityHash != b.Status.IdentityHash {
			t.Errorf("exports sharing a key: hashes %q and %q, want both %q", a.Status.IdentityHash, b.Status.IdentityHash, hexSHA256(shared.Data["key"]))
		}
		if modern.Status.IdentityHash == a.Status.IdentityHash || modern.Status.IdentityHash == widgetsHash {
			t.Errorf("exports of the same resource with their own keys share the hash %q", modern.Status.IdentityHash)
		}
	})

	t.Run("ExportNamingAMissingSecretIsNotValid", func(t *testing.T) {
		export := &apisv1alpha2.APIExport{
			TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport"},
			ObjectMeta: metav1.ObjectMeta{Name: "orphan"},
			Spec:       apisv1alpha2.APIExportSpec{Identity: &apisv1alpha2.Identity{SecretRef: &apisv1alpha2.SecretReference{Namespace: "kcp-system", Name: "nowhere"}}},
		}
		if err := kcp.create(ctx, org.path(), apiExportsGVR, export, &apisv1alpha2.APIExport{}); err != nil {
			t.Fatal(err)
		}
		got := waitForIdentity(t, kcp, org.path(), "orphan", corev1.ConditionFalse)
		c := got.Status.Conditions.Get(apisv1alpha1.APIExportIdentityValid)
		if c.Reason != apisv1alpha1.IdentityVerificationFailedReason || !strings.Contains(c.Message, "kcp-system/nowhere") || got.Status.IdentityHash != "" {
			t.Errorf("IdentityValid = %+v, identityHash %q; want False naming kcp-system/nowhere and no hash", c, got.Status.IdentityHash)
		}
		if _, err := kube.CoreV1().Secrets("kcp-system").Get(ctx, "nowhere", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("a secret the export only names was created: %v", err)
		}
	})

	t.Run("EndpointSliceAndBindingAreStored", func(t *testing.T) {
		slice := &apisv1alpha1.APIExportEndpointSlice{
			TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha1.SchemeGroupVersion.String(), Kind: "APIExportEndpointSlice"},
			ObjectMeta: metav1.ObjectMeta{Name: "widgets-by-hand"},
			Spec:       apisv1alpha1.APIExportEndpointSliceSpec{APIExport: apisv1alpha1.ExportBindingReference{Path: org.path(), Name: "widgets"}},
		}
		stored := &apisv1alpha1.APIExportEndpointSlice{}
		if err := kcp.create(ctx, org.path(), apiExportEndpointSlicesGVR, slice, stored); err != nil {
			t.Fatal(err)
		}
		// The endpoint slice controller writes the status meanwhile: try on
		// the latest version until the answer is about the spec.
		var err error
		for range 10 {
			latest := &apisv1alpha1.APIExportEndpointSlice{}
			if err := kcp.get(ctx, org.path(), apiExportEndpointSlicesGVR, "widgets-by-hand", latest); err != nil {
				t.Fatal(err)
			}
			latest.Spec.APIExport.Name = "modern"
			if err = kcp.update(ctx, org.path(), apiExportEndpointSlicesGVR, "widgets-by-hand", latest, &apisv1alpha1.APIExportEndpointSlice{}); !apierrors.IsConflict(err) {
				break
			}
		}
		requireAPIError(t, err, 422, "point an endpoint slice at another export", "must not be changed")

		binding := &apisv1alpha2.APIBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: "widgets"},
			Spec: apisv1alpha2.APIBindingSpec{
				Reference: apisv1alpha2.BindingReference{Export: &apisv1alpha2.ExportBindingReference{Path: org.path(), Name: "widgets"}},
				PermissionClaims: []apisv1alpha2.AcceptablePermissionClaim{{
					ScopedPermissionClaim: apisv1alpha2.ScopedPermissionClaim{
						PermissionClaim: apisv1alpha2.PermissionClaim{GroupResource: apisv1alpha2.GroupResource{Resource: "configmaps"}, Verbs: []string{"get"}},
						Selector:        apisv1alpha2.PermissionClaimSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"shared": "yes"}}},
					},
					State: apisv1alpha2.ClaimAccepted,
				}},
			},
		}
		if err := kcp.create(ctx, org.path(), apiBindingsGVR, binding, &apisv1alpha2.APIBinding{}); err != nil {
			t.Fatal(err)
		}
		v1 := &apisv1alpha1.APIBinding{}
		if err := kcp.get(ctx, org.path(), apiBindingsV1alpha1GVR, "widgets", v1); err != nil {
			t.Fatal(err)
		}
		if v1.Spec.Reference.Export == nil || v1.Spec.Reference.Export.Name != "widgets" || len(v1.Spec.PermissionClaims) != 1 {
			t.Errorf("v1alpha1 binding = %+v", v1.Spec)
		}
		// The binding controller writes the status meanwhile: update what
		// was last read until the answer is not a conflict.
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			latest := &apisv1alpha1.APIBinding{}
			if err := kcp.get(ctx, org.path(), apiBindingsV1alpha1GVR, "widgets", latest); err != nil {
				return err
			}
			latest.Spec.Reference.Export.Name = "modern"
			return kcp.update(ctx, org.path(), apiBindingsV1alpha1GVR, "widgets", latest, &apisv1alpha1.APIBinding{})
		})
		requireAPIError(t, err, 422, "rebind an APIBinding to another export", "must not be changed")
	})

	t.Run("KubectlShowsTheKindsInCategoryKCP", func(t *testing.T) {
		requireKubectl(t)
		server := serverFlag(t, e.s, org.path())
		out := kubectl(ctx, t, e.s, "", "--context=base", server, "get", "apiexports")
		if !strings.Contains(out, "NAME") || !strings.Contains(out, "AGE") || !strings.Contains(out, "widgets") {
			t.Errorf("kubectl get apiexports:\n%s", out)
		}
		out = kubectl(ctx, t, e.s, "", "--context=base", server, "get", "apiexports", "-o", "wide")
		if !strings.Contains(out, "IDENTITY") || !strings.Contains(out, widgetsHash) {
			t.Errorf("kubectl get apiexports -o wide shows no identity %s:\n%s", widgetsHash, out)
		}
		out = kubectl(ctx, t, e.s, "", "--context=base", server, "explain", "apiexports.spec.identity.secretRef", "--api-version=apis.kcp.io/v1alpha2")
		if !strings.Contains(out, "namespace") {
			t.Errorf("kubectl explain apiexports.spec.identity.secretRef:\n%s", out)
		}
		applied := `{"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIExport","metadata":{"name":"applied"},"spec":{"latestResourceSchemas":["` + schemaName + `"]}}`
		kubectl(ctx, t, e.s, applied, "--context=base", server, "apply", "--server-side", "-f", "-")
		out = kubectl(ctx, t, e.s, "", "--context=base", server, "get", "apiexports.v1alpha2.apis.kcp.io", "applied", "-o", "jsonpath={.spec.resources[0].name}")
		if out != "widgets" {
			t.Errorf("server-side applied v1alpha1 export read as v1alpha2: resources[0].name = %q, want widgets", out)
		}
		out = kubectl(ctx, t, e.s, "", "--context=base", server, "get", "kcp", "-o", "name")
		for _, want := range []string{
			"apiresourceschema.apis.kcp.io/" + schemaName,
			"apiexport.apis.kcp.io/widgets",
			"apiexportendpointslice.apis.kcp.io/widgets",
			"apibinding.apis.kcp.io/widgets",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl get kcp lacks %s:\n%s", want, out)
			}
		}
	})

	e.s.Restart(t)
	e.waitForRootBootstrap(t)

	t.Run("EverythingSurvivesRestart", func(t *testing.T) {
		framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
			return kcp.get(ctx, org.path(), apiResourceSchemasGVR, schemaName, &apisv1alpha1.APIResourceSchema{})
		}, "schema after restart")
		a := waitForIdentity(t, kcp, org.path(), "same-a", corev1.ConditionTrue)
		if a.Status.IdentityHash != hexSHA256([]byte("a shared identity key")) {
			t.Errorf("same-a identityHash after restart = %q", a.Status.IdentityHash)
		}
		widgets := &apisv1alpha2.APIExport{}
		if err := kcp.get(ctx, org.path(), apiExportsGVR, "widgets", widgets); err != nil || widgets.Status.IdentityHash != widgetsHash {
			t.Errorf("widgets after restart: hash %q (err %v), want %q", widgets.Status.IdentityHash, err, widgetsHash)
		}
		v1 := &apisv1alpha1.APIExport{}
		if err := kcp.get(ctx, org.path(), apiExportsV1alpha1GVR, "widgets", v1); err != nil || len(v1.Spec.PermissionClaims) != 2 || !v1.Spec.PermissionClaims[0].All {
			t.Errorf("widgets as v1alpha1 after restart: %+v (err %v)", v1.Spec, err)
		}
		for _, get := range []struct {
			gvr  string
			call func() error
		}{
			{"apiexportendpointslices", func() error {
				return kcp.get(ctx, org.path(), apiExportEndpointSlicesGVR, "widgets-by-hand", &apisv1alpha1.APIExportEndpointSlice{})
			}},
			{"apibindings", func() error { return kcp.get(ctx, org.path(), apiBindingsGVR, "widgets", &apisv1alpha2.APIBinding{}) }},
		} {
			if err := get.call(); err != nil {
				t.Errorf("%s/widgets after restart: %v", get.gvr, err)
			}
		}
	})
}
