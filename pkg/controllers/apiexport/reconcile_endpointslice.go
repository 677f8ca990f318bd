package apiexport

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// endpointSliceReconciler gives every APIExport an APIExportEndpointSlice of
// its name in its workspace, as kcp does, unless the export carries
// apiexports.apis.kcp.io/skip-endpointslice. A slice of that name that
// exists already, the owner's own included, is left as it is; a deleted
// one comes back. The slice is owned by the export, so it goes with it.
type endpointSliceReconciler struct {
	// sliceExists tells whether a slice exists.
	sliceExists func(cluster logicalcluster.Name, name string) bool
	// createSlice creates a slice as the shard.
	createSlice func(ctx context.Context, cluster logicalcluster.Name, slice *apisv1alpha1.APIExportEndpointSlice) error
}

func (r *endpointSliceReconciler) reconcile(ctx context.Context, cluster logicalcluster.Name, export *apisv1alpha2.APIExport) error {
	if _, skip := export.Annotations[apisv1alpha2.APIExportEndpointSliceSkipAnnotation]; skip || r.sliceExists(cluster, export.Name) {
		return nil
	}
	slice := &apisv1alpha1.APIExportEndpointSlice{
		TypeMeta: metav1.TypeMeta{APIVersion: apisv1alpha1.SchemeGroupVersion.String(), Kind: "APIExportEndpointSlice"},
		ObjectMeta: metav1.ObjectMeta{
			Name: export.Name,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport", Name: export.Name, UID: export.UID,
			}},
		},
		Spec: apisv1alpha1.APIExportEndpointSliceSpec{APIExport: apisv1alpha1.ExportBindingReference{Path: cluster.String(), Name: export.Name}},
	}
	if err := r.createSlice(ctx, cluster, slice); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}
