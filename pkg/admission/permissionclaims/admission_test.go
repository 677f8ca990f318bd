package permissionclaims

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/permissionclaim"
)

func TestAdmitLabelsClaimedObjectsAndValidateRefusesForgedLabels(t *testing.T) {
	claim := apisv1alpha2.PermissionClaim{GroupResource: apisv1alpha2.GroupResource{Resource: "configmaps"}, Verbs: []string{"*"}}
	b := &apisv1alpha2.APIBinding{}
	b.Spec.Reference.Export = &apisv1alpha2.ExportBindingReference{Name: "cowboys"}
	b.Spec.PermissionClaims = []apisv1alpha2.AcceptablePermissionClaim{{
		ScopedPermissionClaim: apisv1alpha2.ScopedPermissionClaim{PermissionClaim: claim, Selector: apisv1alpha2.PermissionClaimSelector{MatchAll: true}},
		State:                 apisv1alpha2.ClaimAccepted,
	}}
	b.Status.APIExportClusterName = "provider"
	b.Status.ExportPermissionClaims = []apisv1alpha2.PermissionClaim{claim}
	p := New(func(c logicalcluster.Name) []*apisv1alpha2.APIBinding {
		if c == "consumer" {
			return []*apisv1alpha2.APIBinding{b}
		}
		return nil
	})
	key, value := permissionclaim.LabelKeyAndValue("provider", "cowboys", claim)
	attrs := func(cm *corev1.ConfigMap) admission.Attributes {
		return admission.NewAttributesRecord(cm, nil, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "default", cm.Name,
			corev1.SchemeGroupVersion.WithResource("configmaps"), "", admission.Create, &metav1.CreateOptions{}, false, nil)
	}

	ctx := logicalcluster.WithCluster(context.Background(), "consumer")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{permissionclaim.LabelPrefix + "forged": "x"}}}
	if err := p.Admit(ctx, attrs(cm), nil); err != nil {
		t.Fatal(err)
	}
	if cm.Labels[key] != value || len(cm.Labels) != 1 {
		t.Fatalf("labels %v, want only %s=%s", cm.Labels, key, value)
	}
	if err := p.Validate(ctx, attrs(cm), nil); err != nil {
		t.Fatalf("validate after admit: %v", err)
	}
	cm.Labels[permissionclaim.LabelPrefix+"forged"] = "x"
	if err := p.Validate(ctx, attrs(cm), nil); err == nil {
		t.Fatal("a forged claim label passed validation")
	}

	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b"}}
	if err := p.Admit(logicalcluster.WithCluster(context.Background(), "elsewhere"), attrs(other), nil); err != nil || len(other.Labels) != 0 {
		t.Fatalf("a workspace without the binding: labels %v, err %v", other.Labels, err)
	}
}
