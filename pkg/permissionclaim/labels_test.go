package permissionclaim

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// TestLabelKeyAndValueIsKCPs checks the labels against the values kcp's
// own test pins, so that objects labelled by either are selected by both.
func TestLabelKeyAndValueIsKCPs(t *testing.T) {
	for name, tc := range map[string]struct {
		cluster          logicalcluster.Name
		export           string
		claim            apisv1alpha2.PermissionClaim
		wantKey, wantVal string
	}{
		"core resource": {
			cluster: "root", export: "tenancy.kcp.io",
			claim:   apisv1alpha2.PermissionClaim{GroupResource: apisv1alpha2.GroupResource{Resource: "configmaps"}, Verbs: []string{"get", "list"}},
			wantKey: "claimed.internal.apis.kcp.io/bmCdly9xXiUpEHe3ypvDwvXMTfoVZUE92mqAQf", wantVal: "3QVjs6pfBjMpLEVYYhysJnroYGsQGlWm05E4qe",
		},
		"with identity": {
			cluster: "abcd1234", export: "my-export",
			claim:   apisv1alpha2.PermissionClaim{GroupResource: apisv1alpha2.GroupResource{Group: "apps", Resource: "deployments"}, Verbs: []string{"get"}, IdentityHash: "deadbeef"},
			wantKey: "claimed.internal.apis.kcp.io/phGj1BkmdNY3LKTrtFc1KGLYTBs8Nt50p8PIU", wantVal: "4CpOMiJ5JL9ZC4cG8ne7nGNQbSOEUiwZ89KHal",
		},
	} {
		t.Run(name, func(t *testing.T) {
			k, v := LabelKeyAndValue(tc.cluster, tc.export, tc.claim)
			if k != tc.wantKey || v != tc.wantVal {
				t.Fatalf("got %s=%s, want %s=%s", k, v, tc.wantKey, tc.wantVal)
			}
			tc.claim.Verbs = []string{"*"}
			if k2, v2 := LabelKeyAndValue(tc.cluster, tc.export, tc.claim); k2 != k || v2 != v {
				t.Fatalf("verbs changed the label: %s=%s", k2, v2)
			}
		})
	}
}

func binding(export string, exportClaims []apisv1alpha2.PermissionClaim, accepted ...apisv1alpha2.AcceptablePermissionClaim) *apisv1alpha2.APIBinding {
	b := &apisv1alpha2.APIBinding{}
	b.Spec.Reference.Export = &apisv1alpha2.ExportBindingReference{Path: "root:org", Name: export}
	b.Spec.PermissionClaims = accepted
	b.Status.APIExportClusterName = "provider"
	b.Status.ExportPermissionClaims = exportClaims
	return b
}

func accept(c apisv1alpha2.PermissionClaim, sel apisv1alpha2.PermissionClaimSelector, state apisv1alpha2.AcceptablePermissionClaimState) apisv1alpha2.AcceptablePermissionClaim {
	return apisv1alpha2.AcceptablePermissionClaim{ScopedPermissionClaim: apisv1alpha2.ScopedPermissionClaim{PermissionClaim: c, Selector: sel}, State: state}
}

func TestLabelsForLabelsWhatAnAcceptedClaimSelects(t *testing.T) {
	cms := apisv1alpha2.PermissionClaim{GroupResource: apisv1alpha2.GroupResource{Resource: "configmaps"}, Verbs: []string{"*"}}
	sheriffs := apisv1alpha2.PermissionClaim{GroupResource: apisv1alpha2.GroupResource{Group: "wild.wild.west", Resource: "sheriffs"}, Verbs: []string{"*"}, IdentityHash: "abc"}
	all := apisv1alpha2.PermissionClaimSelector{MatchAll: true}
	yes := apisv1alpha2.PermissionClaimSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"share": "yes"}}}
	cmKey, cmVal := LabelKeyAndValue("provider", "cowboys", cms)
	wrongIdentity := sheriffs
	wrongIdentity.IdentityHash = "xxxxxxx"

	for name, tc := range map[string]struct {
		bindings []*apisv1alpha2.APIBinding
		gr       schema.GroupResource
		labels   map[string]string
		want     map[string]string
	}{
		"accepted, all":              {[]*apisv1alpha2.APIBinding{binding("cowboys", []apisv1alpha2.PermissionClaim{cms}, accept(cms, all, apisv1alpha2.ClaimAccepted))}, schema.GroupResource{Resource: "configmaps"}, nil, map[string]string{cmKey: cmVal}},
		"accepted, selected":         {[]*apisv1alpha2.APIBinding{binding("cowboys", []apisv1alpha2.PermissionClaim{cms}, accept(cms, yes, apisv1alpha2.ClaimAccepted))}, schema.GroupResource{Resource: "configmaps"}, map[string]string{"share": "yes"}, map[string]string{cmKey: cmVal}},
		"accepted, not selected":     {[]*apisv1alpha2.APIBinding{binding("cowboys", []apisv1alpha2.PermissionClaim{cms}, accept(cms, yes, apisv1alpha2.ClaimAccepted))}, schema.GroupResource{Resource: "configmaps"}, nil, map[string]string{}},
		"rejected":                   {[]*apisv1alpha2.APIBinding{binding("cowboys", []apisv1alpha2.PermissionClaim{cms}, accept(cms, all, apisv1alpha2.ClaimRejected))}, schema.GroupResource{Resource: "configmaps"}, nil, map[string]string{}},
		"no longer claimed":          {[]*apisv1alpha2.APIBinding{binding("cowboys", nil, accept(cms, all, apisv1alpha2.ClaimAccepted))}, schema.GroupResource{Resource: "configmaps"}, nil, map[string]string{}},
		"other resource":             {[]*apisv1alpha2.APIBinding{binding("cowboys", []apisv1alpha2.PermissionClaim{cms}, accept(cms, all, apisv1alpha2.ClaimAccepted))}, schema.GroupResource{Resource: "secrets"}, nil, map[string]string{}},
		"identity the export lacks":  {[]*apisv1alpha2.APIBinding{binding("cowboys", []apisv1alpha2.PermissionClaim{sheriffs}, accept(wrongIdentity, all, apisv1alpha2.ClaimAccepted))}, schema.GroupResource{Group: "wild.wild.west", Resource: "sheriffs"}, nil, map[string]string{}},
		"reviews are never labelled": {[]*apisv1alpha2.APIBinding{binding("cowboys", []apisv1alpha2.PermissionClaim{{GroupResource: apisv1alpha2.GroupResource{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}, Verbs: []string{"*"}}}, accept(apisv1alpha2.PermissionClaim{GroupResource: apisv1alpha2.GroupResource{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}, Verbs: []string{"*"}}, all, apisv1alpha2.ClaimAccepted))}, schema.GroupResource{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}, nil, map[string]string{}},
	} {
		t.Run(name, func(t *testing.T) {
			got := LabelsFor(tc.bindings, tc.gr, tc.labels)
			if len(tc.want) == 0 && got != nil {
				t.Fatalf("got %v, want nil", got)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestApplyReplacesOnlyClaimLabels(t *testing.T) {
	got, changed := Apply(map[string]string{"app": "x", LabelPrefix + "old": "1", LabelPrefix + "keep": "2"}, map[string]string{LabelPrefix + "keep": "2", LabelPrefix + "new": "3"})
	want := map[string]string{"app": "x", LabelPrefix + "keep": "2", LabelPrefix + "new": "3"}
	if !changed || len(got) != len(want) {
		t.Fatalf("got %v (changed %v), want %v", got, changed, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if _, changed := Apply(want, map[string]string{LabelPrefix + "keep": "2", LabelPrefix + "new": "3"}); changed {
		t.Fatal("unchanged labels reported as changed")
	}
}

// TestStaleTellsWhichObjectsNeedRelabelling is the decision of the
// controllers that relabel: an object is stale when its claim labels are
// not what its workspace's bindings give it now, whatever its other
// labels.
func TestStaleTellsWhichObjectsNeedRelabelling(t *testing.T) {
	cms := apisv1alpha2.PermissionClaim{GroupResource: apisv1alpha2.GroupResource{Resource: "configmaps"}, Verbs: []string{"*"}}
	all := apisv1alpha2.PermissionClaimSelector{MatchAll: true}
	yes := apisv1alpha2.PermissionClaimSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"share": "yes"}}}
	key, val := LabelKeyAndValue("provider", "cowboys", cms)
	otherKey, _ := LabelKeyAndValue("provider", "other", cms)
	configMaps := schema.GroupResource{Resource: "configmaps"}
	acceptsAll := []*apisv1alpha2.APIBinding{binding("cowboys", []apisv1alpha2.PermissionClaim{cms}, accept(cms, all, apisv1alpha2.ClaimAccepted))}
	acceptsShared := []*apisv1alpha2.APIBinding{binding("cowboys", []apisv1alpha2.PermissionClaim{cms}, accept(cms, yes, apisv1alpha2.ClaimAccepted))}
	rejects := []*apisv1alpha2.APIBinding{binding("cowboys", []apisv1alpha2.PermissionClaim{cms}, accept(cms, all, apisv1alpha2.ClaimRejected))}

	for name, tc := range map[string]struct {
		bindings []*apisv1alpha2.APIBinding
		gr       schema.GroupResource
		labels   map[string]string
		want     bool
	}{
		"labelled as accepted":                  {acceptsAll, configMaps, map[string]string{"app": "x", key: val}, false},
		"admitted before the claim":             {acceptsAll, configMaps, map[string]string{"app": "x"}, true},
		"admitted before the claim was revoked": {rejects, configMaps, map[string]string{key: val}, true},
		"claim label with another value":        {acceptsAll, configMaps, map[string]string{key: "forged"}, true},
		"claim label of another export":         {acceptsAll, configMaps, map[string]string{key: val, otherKey: val}, true},
		"selected, unlabelled":                  {acceptsShared, configMaps, map[string]string{"share": "yes"}, true},
		"no longer selected, labelled":          {acceptsShared, configMaps, map[string]string{"share": "no", key: val}, true},
		"not selected, unlabelled":              {acceptsShared, configMaps, map[string]string{"share": "no"}, false},
		"no bindings, no claim labels":          {nil, configMaps, map[string]string{"app": "x"}, false},
		"no bindings, a claim label":            {nil, configMaps, map[string]string{key: val}, true},
		"another resource":                      {acceptsAll, schema.GroupResource{Resource: "secrets"}, nil, false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Stale(tc.bindings, tc.gr, tc.labels); got != tc.want {
				t.Fatalf("Stale = %v, want %v", got, tc.want)
			}
		})
	}
}
