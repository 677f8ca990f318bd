package apibinding

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

var (
	configMapsClaim = apisv1alpha2.PermissionClaim{GroupResource: apisv1alpha2.GroupResource{Resource: "configmaps"}, Verbs: []string{"*"}}
	sheriffsClaim   = apisv1alpha2.PermissionClaim{GroupResource: apisv1alpha2.GroupResource{Group: "wild.wild.west", Resource: "sheriffs"}, Verbs: []string{"*"}, IdentityHash: "abcd"}
	reviewsClaim    = apisv1alpha2.PermissionClaim{GroupResource: apisv1alpha2.GroupResource{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}, Verbs: []string{"*"}}
)

func acceptClaim(c apisv1alpha2.PermissionClaim, state apisv1alpha2.AcceptablePermissionClaimState) apisv1alpha2.AcceptablePermissionClaim {
	return apisv1alpha2.AcceptablePermissionClaim{
		ScopedPermissionClaim: apisv1alpha2.ScopedPermissionClaim{PermissionClaim: c, Selector: apisv1alpha2.PermissionClaimSelector{MatchAll: true}},
		State:                 state,
	}
}

// claimsWorld reconciles b's claims as the controller does: the stored
// status is b's own, as the informer shows it after the previous write.
type claimsWorld struct {
	relabelled []schema.GroupResource
	fail       map[schema.GroupResource]bool
}

func (w *claimsWorld) reconcile(t *testing.T, b *apisv1alpha2.APIBinding, export *apisv1alpha2.APIExport) error {
	t.Helper()
	w.relabelled = nil
	r := &permissionClaimsReconciler{relabel: func(_ context.Context, cluster logicalcluster.Name, gr schema.GroupResource) error {
		if cluster != consumer {
			t.Fatalf("relabel in %s", cluster)
		}
		w.relabelled = append(w.relabelled, gr)
		if w.fail[gr] {
			return errors.New("boom")
		}
		return nil
	}}
	stored := b.Status.DeepCopy()
	return r.reconcile(context.Background(), consumer, b, stored, export)
}

func appliedKeys(b *apisv1alpha2.APIBinding) []string {
	var out []string
	for _, c := range b.Status.AppliedPermissionClaims {
		out = append(out, claimKey(c.PermissionClaim))
	}
	return out
}

func TestReconcilePermissionClaimsAppliesWhatIsAcceptedAndClaimed(t *testing.T) {
	export := widgetExport(identity)
	export.Spec.PermissionClaims = []apisv1alpha2.PermissionClaim{configMapsClaim, sheriffsClaim, reviewsClaim}
	b := newBinding("b", "root:provider", "widgets")
	w := &claimsWorld{}

	// First the export's claims reach the status; nothing is relabelled
	// until admission can see them.
	if err := w.reconcile(t, b, export); err != nil {
		t.Fatal(err)
	}
	if len(b.Status.ExportPermissionClaims) != 3 || len(w.relabelled) != 0 {
		t.Fatalf("export claims %v, relabelled %v", b.Status.ExportPermissionClaims, w.relabelled)
	}
	if err := w.reconcile(t, b, export); err != nil {
		t.Fatal(err)
	}
	if c := condition(t, b, apisv1alpha2.PermissionClaimsApplied); c.Status != corev1.ConditionTrue {
		t.Fatalf("PermissionClaimsApplied = %+v", c)
	}

	// Accepting: configmaps and sheriffs are relabelled, reviews are never
	// stored; a wrong identity is invalid and not applied.
	wrong := sheriffsClaim
	wrong.IdentityHash = "xxxxxxx"
	b.Spec.PermissionClaims = []apisv1alpha2.AcceptablePermissionClaim{
		acceptClaim(configMapsClaim, apisv1alpha2.ClaimAccepted), acceptClaim(sheriffsClaim, apisv1alpha2.ClaimAccepted),
		acceptClaim(reviewsClaim, apisv1alpha2.ClaimAccepted), acceptClaim(wrong, apisv1alpha2.ClaimAccepted),
	}
	if err := w.reconcile(t, b, export); err != nil {
		t.Fatal(err)
	}
	if got := w.relabelled; len(got) != 2 || got[0].Resource != "configmaps" || got[1].Resource != "sheriffs" {
		t.Fatalf("relabelled %v", got)
	}
	if got := strings.Join(appliedKeys(b), " "); got != "configmaps// sheriffs/wild.wild.west/abcd subjectaccessreviews/authorization.k8s.io/" {
		t.Fatalf("applied %s", got)
	}
	c := condition(t, b, apisv1alpha2.PermissionClaimsValid)
	if c.Status != corev1.ConditionFalse || c.Reason != apisv1alpha2.InvalidPermissionClaimsReason ||
		c.Message != `1 unexpected and/or invalid permission claims (showing first 1): unexpected/invalid claim for sheriffs.wild.wild.west (identity "xxxxxxx")` {
		t.Fatalf("PermissionClaimsValid = %+v", c)
	}

	// Nothing changed: nothing relabelled.
	if err := w.reconcile(t, b, export); err != nil || len(w.relabelled) != 0 {
		t.Fatalf("relabelled %v, err %v", w.relabelled, err)
	}

	// Another selector relabels.
	b.Spec.PermissionClaims[0].Selector = apisv1alpha2.PermissionClaimSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"share": "yes"}}}
	if err := w.reconcile(t, b, export); err != nil {
		t.Fatal(err)
	}
	if got := w.relabelled; len(got) != 1 || got[0].Resource != "configmaps" {
		t.Fatalf("relabelled %v", got)
	}

	// Rejecting sheriffs relabels (unlabels) them.
	b.Spec.PermissionClaims[1].State = apisv1alpha2.ClaimRejected
	b.Spec.PermissionClaims = b.Spec.PermissionClaims[:3]
	if err := w.reconcile(t, b, export); err != nil {
		t.Fatal(err)
	}
	if got := w.relabelled; len(got) != 1 || got[0].Resource != "sheriffs" {
		t.Fatalf("relabelled %v", got)
	}
	if c := condition(t, b, apisv1alpha2.PermissionClaimsValid); c.Status != corev1.ConditionTrue {
		t.Fatalf("PermissionClaimsValid = %+v", c)
	}

	// The export stops claiming configmaps: its status changes first, then
	// configmaps are unlabelled.
	export.Spec.PermissionClaims = []apisv1alpha2.PermissionClaim{sheriffsClaim, reviewsClaim}
	if err := w.reconcile(t, b, export); err != nil || len(w.relabelled) != 0 {
		t.Fatalf("relabelled %v before the status shows the export's claims, err %v", w.relabelled, err)
	}
	if err := w.reconcile(t, b, export); err != nil {
		t.Fatal(err)
	}
	if got := w.relabelled; len(got) != 1 || got[0].Resource != "configmaps" {
		t.Fatalf("relabelled %v", got)
	}
	if got := strings.Join(appliedKeys(b), " "); got != "subjectaccessreviews/authorization.k8s.io/" {
		t.Fatalf("applied %s", got)
	}
}

func TestReconcilePermissionClaimsReportsRelabelFailures(t *testing.T) {
	export := widgetExport(identity)
	export.Spec.PermissionClaims = []apisv1alpha2.PermissionClaim{configMapsClaim}
	b := newBinding("b", "root:provider", "widgets")
	b.Spec.PermissionClaims = []apisv1alpha2.AcceptablePermissionClaim{acceptClaim(configMapsClaim, apisv1alpha2.ClaimAccepted)}
	b.Status.ExportPermissionClaims = []apisv1alpha2.PermissionClaim{configMapsClaim}
	w := &claimsWorld{fail: map[schema.GroupResource]bool{{Resource: "configmaps"}: true}}
	if err := w.reconcile(t, b, export); err == nil {
		t.Fatal("no error")
	}
	c := condition(t, b, apisv1alpha2.PermissionClaimsApplied)
	if c.Status != corev1.ConditionFalse || c.Reason != "InternalError" || !strings.HasPrefix(c.Message, "Permission claims have not been fully applied: ") {
		t.Fatalf("PermissionClaimsApplied = %+v", c)
	}
	if len(b.Status.AppliedPermissionClaims) != 0 {
		t.Fatalf("applied %v", appliedKeys(b))
	}
	// Retried, it succeeds.
	w.fail = nil
	if err := w.reconcile(t, b, export); err != nil || len(b.Status.AppliedPermissionClaims) != 1 {
		t.Fatalf("applied %v, err %v", appliedKeys(b), err)
	}
}
