package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidateClusterCachedResource(t *testing.T) {
	for name, tc := range map[string]struct {
		spec    ClusterCachedResourceSpec
		invalid bool
	}{
		"a CRD's resource":  {spec: ClusterCachedResourceSpec{GroupVersionResource: GroupVersionResource{Group: "machines.svm.io", Version: "v1alpha1", Resource: "instances"}}},
		"no resource":       {spec: ClusterCachedResourceSpec{GroupVersionResource: GroupVersionResource{Group: "machines.svm.io"}}, invalid: true},
		"upper-case group":  {spec: ClusterCachedResourceSpec{GroupVersionResource: GroupVersionResource{Group: "Machines", Resource: "instances"}}, invalid: true},
		"bad selector":      {spec: ClusterCachedResourceSpec{GroupVersionResource: GroupVersionResource{Resource: "instances"}, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a b": "c"}}}, invalid: true},
		"nameless identity": {spec: ClusterCachedResourceSpec{GroupVersionResource: GroupVersionResource{Resource: "instances"}, Identity: &Identity{SecretRef: &SecretReference{Namespace: "default"}}}, invalid: true},
	} {
		t.Run(name, func(t *testing.T) {
			errs := ValidateClusterCachedResource(&ClusterCachedResource{ObjectMeta: metav1.ObjectMeta{Name: "instances"}, Spec: tc.spec})
			if (len(errs) > 0) != tc.invalid {
				t.Errorf("errors %v, want invalid=%t", errs, tc.invalid)
			}
		})
	}
}

func TestEndpointSliceReferencesDoNotChange(t *testing.T) {
	old := &ClusterCachedResourceEndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "s", ResourceVersion: "1"}, Spec: ClusterCachedResourceEndpointSliceSpec{
		ClusterCachedResource: ClusterCachedResourceReference{Name: "instances"}, APIExport: ExportBindingReference{Name: "export"},
	}}
	if errs := ValidateClusterCachedResourceEndpointSlice(old); len(errs) > 0 {
		t.Fatalf("valid slice refused: %v", errs)
	}
	changed := old.DeepCopy()
	changed.Spec.APIExport.Name = "other"
	if errs := ValidateClusterCachedResourceEndpointSliceUpdate(changed, old); len(errs) != 1 {
		t.Errorf("changed export reference: errors %v, want one", errs)
	}
}
