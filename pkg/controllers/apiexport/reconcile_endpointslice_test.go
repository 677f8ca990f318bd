package apiexport

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func TestDefaultEndpointSlice(t *testing.T) {
	export := func(annotations map[string]string) *apisv1alpha2.APIExport {
		return &apisv1alpha2.APIExport{ObjectMeta: metav1.ObjectMeta{Name: "widgets", UID: "u1", Annotations: annotations}}
	}
	for _, tc := range []struct {
		name        string
		export      *apisv1alpha2.APIExport
		exists      bool
		createErr   error
		wantCreated bool
		wantErr     bool
	}{
		{name: "created", export: export(nil), wantCreated: true},
		{name: "skipped by annotation", export: export(map[string]string{apisv1alpha2.APIExportEndpointSliceSkipAnnotation: ""})},
		{name: "an existing slice is left alone", export: export(nil), exists: true},
		{name: "created meanwhile", export: export(nil), createErr: apierrors.NewAlreadyExists(schema.GroupResource{}, "widgets"), wantCreated: true},
		{name: "create fails", export: export(nil), createErr: apierrors.NewInternalError(context.Canceled), wantCreated: true, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var created *apisv1alpha1.APIExportEndpointSlice
			r := &endpointSliceReconciler{
				sliceExists: func(cluster logicalcluster.Name, name string) bool { return tc.exists },
				createSlice: func(_ context.Context, cluster logicalcluster.Name, s *apisv1alpha1.APIExportEndpointSlice) error {
					if cluster != "provider" {
						t.Errorf("slice created in %s, want the export's cluster", cluster)
					}
					created = s
					return tc.createErr
				},
			}
			err := r.reconcile(context.Background(), "provider", tc.export)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if (created != nil) != tc.wantCreated {
				t.Fatalf("created %+v, want created %v", created, tc.wantCreated)
			}
			if created == nil {
				return
			}
			if created.Name != "widgets" || created.Spec.APIExport != (apisv1alpha1.ExportBindingReference{Path: "provider", Name: "widgets"}) {
				t.Errorf("slice %s of %+v, want widgets of provider:widgets", created.Name, created.Spec.APIExport)
			}
			if len(created.OwnerReferences) != 1 || created.OwnerReferences[0].UID != "u1" || created.OwnerReferences[0].Kind != "APIExport" {
				t.Errorf("owner references %+v, want the export", created.OwnerReferences)
			}
		})
	}
}
