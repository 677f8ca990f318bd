package v1alpha2

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
)

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := Install(s); err != nil {
		t.Fatal(err)
	}
	return s
}

var (
	labelSelector = metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	condition     = conditionsv1alpha1.Condition{Type: "IdentityValid", Status: corev1.ConditionTrue, LastTransitionTime: metav1.Unix(1700000000, 0)}
)

// v1alpha2 exports that v1alpha1 expresses fully, partly, or not at all.
func v1alpha2Exports() map[string]*APIExport {
	crd := ResourceSchemaStorage{CRD: &ResourceSchemaStorageCRD{}}
	return map[string]*APIExport{
		"empty": {ObjectMeta: metav1.ObjectMeta{Name: "empty"}},
		"crd resources and wildcard claims": {
			ObjectMeta: metav1.ObjectMeta{Name: "a", Annotations: map[string]string{"keep": "me"}},
			Spec: APIExportSpec{
				Resources:               []ResourceSchema{{Name: "widgets", Group: "example.io", Schema: "v1.widgets.example.io", Storage: crd}, {Name: "configmaps", Group: "", Schema: "v2.configmaps.core", Storage: crd}},
				Identity:                &Identity{SecretRef: &SecretReference{Namespace: "kcp-system", Name: "a"}},
				MaximalPermissionPolicy: &MaximalPermissionPolicy{Local: &LocalAPIExportPolicy{}},
				PermissionClaims:        []PermissionClaim{{GroupResource: GroupResource{Resource: "secrets"}, Verbs: []string{"*"}}},
			},
			Status: APIExportStatus{IdentityHash: "abcd", Conditions: conditionsv1alpha1.Conditions{condition}, VirtualWorkspaces: []VirtualWorkspace{{URL: "https://vw"}}},
		},
		"virtual and mismatched resources, verbs and selectors": {
			ObjectMeta: metav1.ObjectMeta{Name: "b"},
			Spec: APIExportSpec{
				Resources: []ResourceSchema{
					{Name: "virtuals", Group: "example.io", Schema: "v1.virtuals.example.io", Storage: ResourceSchemaStorage{Virtual: &ResourceSchemaStorageVirtual{Reference: TypedLocalObjectReference{APIGroup: ptr.To("x.io"), Kind: "Slice", Name: "s"}}}},
					{Name: "widgets", Group: "example.io", Schema: "v1.widgets.example.io", Storage: crd},
					{Name: "gadgets", Group: "example.io", Schema: "v1.other.example.io", Storage: crd},
				},
				PermissionClaims: []PermissionClaim{
					{GroupResource: GroupResource{Resource: "configmaps"}, Verbs: []string{"get", "list"}},
					{GroupResource: GroupResource{Group: "example.io", Resource: "things"}, Verbs: []string{"*"}, IdentityHash: "ff", DefaultSelector: &PermissionClaimSelector{LabelSelector: labelSelector}},
					{GroupResource: GroupResource{Resource: "secrets"}, Verbs: []string{"*"}},
				},
			},
		},
	}
}

func v1alpha1Exports() map[string]*apisv1alpha1.APIExport {
	return map[string]*apisv1alpha1.APIExport{
		"schemas": {
			ObjectMeta: metav1.ObjectMeta{Name: "a"},
			Spec:       apisv1alpha1.APIExportSpec{LatestResourceSchemas: []string{"v1.widgets.example.io", "v1.configmaps.core"}},
		},
		"claims with all and selectors": {
			ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: map[string]string{"l": "v"}},
			Spec: apisv1alpha1.APIExportSpec{
				Identity: &apisv1alpha1.Identity{SecretRef: &apisv1alpha1.SecretReference{Namespace: "ns", Name: "s"}},
				PermissionClaims: []apisv1alpha1.PermissionClaim{
					{GroupResource: apisv1alpha1.GroupResource{Resource: "configmaps"}, All: true},
					{GroupResource: apisv1alpha1.GroupResource{Resource: "secrets"}, ResourceSelector: []apisv1alpha1.ResourceSelector{{Name: "x", Namespace: "y"}}},
					{GroupResource: apisv1alpha1.GroupResource{Group: "example.io", Resource: "things"}, IdentityHash: "ff"},
				},
			},
			Status: apisv1alpha1.APIExportStatus{IdentityHash: "abcd", Conditions: conditionsv1alpha1.Conditions{condition}},
		},
	}
}

func TestAPIExportRoundTripsThroughV1alpha1WithoutLoss(t *testing.T) {
	s := newScheme(t)
	for name, in := range v1alpha2Exports() {
		t.Run(name, func(t *testing.T) {
			v1 := &apisv1alpha1.APIExport{}
			if err := s.Convert(in.DeepCopy(), v1, nil); err != nil {
				t.Fatal(err)
			}
			back := &APIExport{}
			if err := s.Convert(v1, back, nil); err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(in, back) {
				t.Errorf("v1alpha2 → v1alpha1 → v1alpha2 changed the export:\n%s", diff.Diff(in, back))
			}
		})
	}
}

func TestAPIExportRoundTripsThroughV1alpha2WithoutLoss(t *testing.T) {
	s := newScheme(t)
	for name, in := range v1alpha1Exports() {
		t.Run(name, func(t *testing.T) {
			v2 := &APIExport{}
			if err := s.Convert(in.DeepCopy(), v2, nil); err != nil {
				t.Fatal(err)
			}
			back := &apisv1alpha1.APIExport{}
			if err := s.Convert(v2, back, nil); err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(in, back) {
				t.Errorf("v1alpha1 → v1alpha2 → v1alpha1 changed the export:\n%s", diff.Diff(in, back))
			}
		})
	}
}

func TestLatestResourceSchemasBecomeCRDResources(t *testing.T) {
	in := v1alpha1Exports()["schemas"]
	out := &APIExport{}
	if err := newScheme(t).Convert(in, out, nil); err != nil {
		t.Fatal(err)
	}
	crd := ResourceSchemaStorage{CRD: &ResourceSchemaStorageCRD{}}
	want := []ResourceSchema{{Name: "widgets", Group: "example.io", Schema: "v1.widgets.example.io", Storage: crd}, {Name: "configmaps", Schema: "v1.configmaps.core", Storage: crd}}
	if !apiequality.Semantic.DeepEqual(out.Spec.Resources, want) {
		t.Errorf("resources = %+v, want %+v", out.Spec.Resources, want)
	}
	if len(out.Annotations) != 0 {
		t.Errorf("annotations %v on a fully expressible export", out.Annotations)
	}
}

func TestV1alpha1ClaimsGetAllVerbs(t *testing.T) {
	out := &APIExport{}
	if err := newScheme(t).Convert(v1alpha1Exports()["claims with all and selectors"], out, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range out.Spec.PermissionClaims {
		if len(c.Verbs) != 1 || c.Verbs[0] != "*" {
			t.Errorf("claim %v: verbs %v, want [*]", c.GroupResource, c.Verbs)
		}
	}
	if out.Annotations[PermissionClaimsV1Alpha1Annotation] == "" {
		t.Errorf("annotations %v keep no v1alpha1 claims", out.Annotations)
	}
}

func v1alpha2Bindings() map[string]*APIBinding {
	claim := func(resource string, verbs ...string) PermissionClaim {
		return PermissionClaim{GroupResource: GroupResource{Resource: resource}, Verbs: verbs}
	}
	return map[string]*APIBinding{
		"plain": {
			ObjectMeta: metav1.ObjectMeta{Name: "a"},
			Spec:       APIBindingSpec{Reference: BindingReference{Export: &ExportBindingReference{Path: "root:org", Name: "e"}}},
			Status: APIBindingStatus{
				APIExportClusterName: "abc", Phase: APIBindingPhaseBound, Conditions: conditionsv1alpha1.Conditions{condition},
				BoundResources: []BoundAPIResource{{Group: "example.io", Resource: "widgets", Schema: BoundAPIResourceSchema{Name: "v1.widgets.example.io", UID: "u", IdentityHash: "ff"}, StorageVersions: []string{"v1"}}},
			},
		},
		"claims v1alpha1 cannot express": {
			ObjectMeta: metav1.ObjectMeta{Name: "b", Annotations: map[string]string{"x": "y"}},
			Spec: APIBindingSpec{
				Reference: BindingReference{Export: &ExportBindingReference{Name: "e"}},
				PermissionClaims: []AcceptablePermissionClaim{
					{ScopedPermissionClaim: ScopedPermissionClaim{PermissionClaim: claim("configmaps", "*"), Selector: PermissionClaimSelector{MatchAll: true}}, State: ClaimAccepted},
					{ScopedPermissionClaim: ScopedPermissionClaim{PermissionClaim: claim("secrets", "get"), Selector: PermissionClaimSelector{LabelSelector: labelSelector}}, State: ClaimRejected},
					{ScopedPermissionClaim: ScopedPermissionClaim{PermissionClaim: claim("pods", "*")}, State: ClaimAccepted},
				},
			},
			Status: APIBindingStatus{
				ExportPermissionClaims:  []PermissionClaim{claim("configmaps", "*"), claim("secrets", "get", "list")},
				AppliedPermissionClaims: []ScopedPermissionClaim{{PermissionClaim: claim("configmaps", "*"), Selector: PermissionClaimSelector{MatchAll: true}}, {PermissionClaim: claim("secrets", "get"), Selector: PermissionClaimSelector{LabelSelector: labelSelector}}},
			},
		},
	}
}

func v1alpha1Bindings() map[string]*apisv1alpha1.APIBinding {
	gr := func(resource string) apisv1alpha1.GroupResource {
		return apisv1alpha1.GroupResource{Resource: resource}
	}
	selector := []apisv1alpha1.ResourceSelector{{Namespace: "n"}}
	return map[string]*apisv1alpha1.APIBinding{
		"claims with all and selectors": {
			ObjectMeta: metav1.ObjectMeta{Name: "b"},
			Spec: apisv1alpha1.APIBindingSpec{
				Reference: apisv1alpha1.BindingReference{Export: &apisv1alpha1.ExportBindingReference{Path: "root", Name: "e"}},
				PermissionClaims: []apisv1alpha1.AcceptablePermissionClaim{
					{PermissionClaim: apisv1alpha1.PermissionClaim{GroupResource: gr("configmaps"), All: true}, State: apisv1alpha1.ClaimAccepted},
					{PermissionClaim: apisv1alpha1.PermissionClaim{GroupResource: gr("secrets"), ResourceSelector: selector}, State: apisv1alpha1.ClaimRejected},
				},
			},
			Status: apisv1alpha1.APIBindingStatus{
				Phase:                   apisv1alpha1.APIBindingPhaseBinding,
				ExportPermissionClaims:  []apisv1alpha1.PermissionClaim{{GroupResource: gr("configmaps"), All: true}, {GroupResource: gr("secrets"), ResourceSelector: selector}},
				AppliedPermissionClaims: []apisv1alpha1.PermissionClaim{{GroupResource: gr("configmaps"), All: true}, {GroupResource: gr("secrets"), ResourceSelector: selector}},
			},
		},
	}
}

func TestAPIBindingRoundTripsThroughV1alpha1WithoutLoss(t *testing.T) {
	s := newScheme(t)
	for name, in := range v1alpha2Bindings() {
		t.Run(name, func(t *testing.T) {
			v1 := &apisv1alpha1.APIBinding{}
			if err := s.Convert(in.DeepCopy(), v1, nil); err != nil {
				t.Fatal(err)
			}
			back := &APIBinding{}
			if err := s.Convert(v1, back, nil); err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(in, back) {
				t.Errorf("v1alpha2 → v1alpha1 → v1alpha2 changed the binding:\n%s", diff.Diff(in, back))
			}
		})
	}
}

func TestAPIBindingRoundTripsThroughV1alpha2WithoutLoss(t *testing.T) {
	s := newScheme(t)
	for name, in := range v1alpha1Bindings() {
		t.Run(name, func(t *testing.T) {
			v2 := &APIBinding{}
			if err := s.Convert(in.DeepCopy(), v2, nil); err != nil {
				t.Fatal(err)
			}
			back := &apisv1alpha1.APIBinding{}
			if err := s.Convert(v2, back, nil); err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(in, back) {
				t.Errorf("v1alpha1 → v1alpha2 → v1alpha1 changed the binding:\n%s", diff.Diff(in, back))
			}
		})
	}
}

// TestServedVersionsDecodeToOneInternalObject decodes a v1alpha1 document
// the way the server does, into the internal version, and encodes it as
// the storage version v1alpha2.
func TestServedVersionsDecodeToOneInternalObject(t *testing.T) {
	s := newScheme(t)
	codecs := serializer.NewCodecFactory(s)
	doc := `{"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIExport","metadata":{"name":"e"},"spec":{"latestResourceSchemas":["v1.widgets.example.io"]}}`
	obj, _, err := codecs.UniversalDecoder(apisv1alpha1.InternalGroupVersion).Decode([]byte(doc), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	internal, ok := obj.(*APIExport)
	if !ok || len(internal.Spec.Resources) != 1 || internal.Spec.Resources[0].Name != "widgets" {
		t.Fatalf("decoded %T %+v, want an internal APIExport with resource widgets", obj, obj)
	}
	info, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	encoded, err := runtime.Encode(codecs.EncoderForVersion(info.Serializer, SchemeGroupVersion), internal)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"APIExport","apiVersion":"apis.kcp.io/v1alpha2","metadata":{"name":"e"},"spec":{"resources":[{"name":"widgets","group":"example.io","schema":"v1.widgets.example.io","storage":{"crd":{}}}]},"status":{}}` + "\n"
	if string(encoded) != want {
		t.Errorf("stored as\n%s\nwant\n%s", encoded, want)
	}
}
