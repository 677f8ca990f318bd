package apiexport

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/registry/registrytest"
)

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := apisv1alpha2.Install(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func newExport() *apisv1alpha2.APIExport {
	return &apisv1alpha2.APIExport{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets", ResourceVersion: "1"},
		Spec:       apisv1alpha2.APIExportSpec{Resources: []apisv1alpha2.ResourceSchema{{Name: "widgets", Group: "example.io", Schema: "v1.widgets.example.io", Storage: apisv1alpha2.ResourceSchemaStorage{CRD: &apisv1alpha2.ResourceSchemaStorageCRD{}}}}},
	}
}

func TestCreateDefaultsIdentityAndDropsForgedStatus(t *testing.T) {
	strategy := NewStrategy(newScheme(t))
	e := newExport()
	e.Status.IdentityHash = "abcd"
	strategy.PrepareForCreate(context.Background(), e)
	if e.Status.IdentityHash != "" {
		t.Errorf("identityHash %q survived create", e.Status.IdentityHash)
	}
	if r := e.Spec.Identity; r == nil || r.SecretRef == nil || *r.SecretRef != (apisv1alpha2.SecretReference{Namespace: "kcp-system", Name: "widgets"}) {
		t.Errorf("identity = %+v, want kcp-system/widgets", r)
	}
	if errs := strategy.Validate(context.Background(), e); len(errs) != 0 {
		t.Errorf("unexpected errors: %v", errs)
	}
}

func TestUpdateWithoutIdentityKeepsTheOldOne(t *testing.T) {
	strategy := NewStrategy(newScheme(t))
	old := newExport()
	old.Spec.Identity = &apisv1alpha2.Identity{SecretRef: &apisv1alpha2.SecretReference{Namespace: "kcp-system", Name: "custom"}}
	old.Status.IdentityHash = "abcd"
	updated := old.DeepCopy()
	updated.Spec.Identity = nil
	updated.Status = apisv1alpha2.APIExportStatus{}
	strategy.PrepareForUpdate(context.Background(), updated, old)
	if updated.Spec.Identity.SecretRef.Name != "custom" || updated.Status.IdentityHash != "abcd" {
		t.Errorf("identity %+v status %+v after an update without them, want the old ones", updated.Spec.Identity, updated.Status)
	}
	if updated.Generation != old.Generation {
		t.Errorf("generation bumped without a spec change")
	}
}

func TestStatusUpdateKeepsSpec(t *testing.T) {
	strategy := NewStatusStrategy(NewStrategy(newScheme(t)))
	old := newExport()
	updated := old.DeepCopy()
	updated.Spec.Resources = nil
	updated.Status.IdentityHash = "abcd"
	strategy.PrepareForUpdate(context.Background(), updated, old)
	if len(updated.Spec.Resources) != 1 || updated.Status.IdentityHash != "abcd" {
		t.Errorf("status update: spec %+v status %+v", updated.Spec, updated.Status)
	}
}

func TestResetFieldsCoverBothVersions(t *testing.T) {
	fields := NewStrategy(newScheme(t)).GetResetFields()
	for _, v := range []fieldpath.APIVersion{"apis.kcp.io/v1alpha1", "apis.kcp.io/v1alpha2"} {
		if s := fields[v]; s == nil || !s.Has(fieldpath.MakePathOrDie("status")) {
			t.Errorf("reset fields of %s = %v, want status", v, s)
		}
	}
}

func TestNewRESTServesClusterScopedResourceInCategoryKCP(t *testing.T) {
	getter := &registrytest.RESTOptionsGetter{}
	main, statusREST, err := NewREST(newScheme(t), getter)
	if err != nil {
		t.Fatal(err)
	}
	if main.NamespaceScoped() || main.Categories()[0] != "kcp" || main.GetSingularName() != "apiexport" {
		t.Errorf("scoped %v categories %v singular %q", main.NamespaceScoped(), main.Categories(), main.GetSingularName())
	}
	if _, ok := statusREST.New().(*apisv1alpha2.APIExport); !ok {
		t.Errorf("status New() = %T", statusREST.New())
	}
}
