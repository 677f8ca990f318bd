package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/test/framework"
)

// TestEveryAPIExportGetsAnEndpointSliceOfItsName: as in kcp, an APIExport
// gets an APIExportEndpointSlice of its name in its workspace, which comes
// back when deleted and goes with the export, unless the export carries
// apiexports.apis.kcp.io/skip-endpointslice.
func TestEveryAPIExportGetsAnEndpointSliceOfItsName(t *testing.T) {
	t.Parallel()
	e := startWorkspaceShard(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	kcp := e.kcp(t, kcpAdmin)
	org := e.readyOrg(ctx, t, "slices")
	createExport := func(name string, annotations map[string]string) *apisv1alpha2.APIExport {
		t.Helper()
		out := &apisv1alpha2.APIExport{}
		in := &apisv1alpha2.APIExport{
			TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		}
		if err := kcp.create(ctx, org.path(), apiExportsGVR, in, out); err != nil {
			t.Fatalf("create APIExport %s: %v", name, err)
		}
		return out
	}
	// waitForSlice polls until the slice name exists with a UID other than
	// not, and returns it.
	waitForSlice := func(name string, not types.UID) *apisv1alpha1.APIExportEndpointSlice {
		t.Helper()
		var slice *apisv1alpha1.APIExportEndpointSlice
		framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
			slice = &apisv1alpha1.APIExportEndpointSlice{}
			if err := kcp.get(ctx, org.path(), apiExportEndpointSlicesGVR, name, slice); err != nil {
				return err
			}
			if slice.UID == not {
				return fmt.Errorf("still the slice %s", not)
			}
			return nil
		}, "APIExportEndpointSlice %s", name)
		return slice
	}

	widgets := createExport("widgets", nil)
	slice := waitForSlice("widgets", "")
	t.Run("SliceNamesTheExportAndIsOwnedByIt", func(t *testing.T) {
		if slice.Spec.APIExport.Name != "widgets" || (slice.Spec.APIExport.Path != org.cluster() && slice.Spec.APIExport.Path != org.path()) {
			t.Errorf("spec.export = %+v, want widgets of %s", slice.Spec.APIExport, org.path())
		}
		if len(slice.OwnerReferences) != 1 || slice.OwnerReferences[0].UID != widgets.UID {
			t.Errorf("ownerReferences = %+v, want the export %s", slice.OwnerReferences, widgets.UID)
		}
	})
	t.Run("DeletedSliceComesBack", func(t *testing.T) {
		if err := kcp.delete(ctx, org.path(), apiExportEndpointSlicesGVR, "widgets"); err != nil {
			t.Fatal(err)
		}
		waitForSlice("widgets", slice.UID)
	})
	t.Run("SkipAnnotationMeansNoSlice", func(t *testing.T) {
		createExport("quiet", map[string]string{apisv1alpha2.APIExportEndpointSliceSkipAnnotation: "true"})
		// An export created after it gets its slice: by then the quiet one
		// was reconciled too.
		createExport("loud", nil)
		waitForSlice("loud", "")
		err := kcp.get(ctx, org.path(), apiExportEndpointSlicesGVR, "quiet", &apisv1alpha1.APIExportEndpointSlice{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("slice of the export that skips it: %v, want 404", err)
		}
	})
	t.Run("SliceGoesWithTheExport", func(t *testing.T) {
		if err := kcp.delete(ctx, org.path(), apiExportsGVR, "widgets"); err != nil {
			t.Fatal(err)
		}
		framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
			err := kcp.get(ctx, org.path(), apiExportEndpointSlicesGVR, "widgets", &apisv1alpha1.APIExportEndpointSlice{})
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("the slice outlived its export: %v", err)
			}
			return nil
		}, "the export's slice is gone")
	})
}
