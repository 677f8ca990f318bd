package workspacetype

import (
	"context"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/registry/registrytest"
)

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := tenancyv1alpha1.Install(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

func newWorkspaceType() *tenancyv1alpha1.WorkspaceType {
	return &tenancyv1alpha1.WorkspaceType{
		ObjectMeta: metav1.ObjectMeta{Name: "team", ResourceVersion: "1"},
		Spec: tenancyv1alpha1.WorkspaceTypeSpec{
			Initializer:               true,
			DefaultChildWorkspaceType: &tenancyv1alpha1.WorkspaceTypeReference{Name: "universal", Path: "root"},
		},
	}
}

var initializingVW = tenancyv1alpha1.VirtualWorkspace{URL: "https://vw.example/services/initializingworkspaces/root:team", Type: tenancyv1alpha1.VirtualWorkspaceTypeInitializing}

func TestPrepareForCreateResetsStatus(t *testing.T) {
	strategy := NewStrategy(newScheme(t))
	wt := newWorkspaceType()
	wt.Status.VirtualWorkspaces = []tenancyv1alpha1.VirtualWorkspace{initializingVW}

	strategy.PrepareForCreate(context.Background(), wt)

	if !apiequality.Semantic.DeepEqual(wt.Status, tenancyv1alpha1.WorkspaceTypeStatus{}) {
		t.Errorf("status = %+v, want it reset", wt.Status)
	}
	if errs := strategy.Validate(context.Background(), wt); len(errs) != 0 {
		t.Errorf("unexpected errors: %v", errs)
	}
}

func TestPrepareForUpdateKeepsStatus(t *testing.T) {
	strategy := NewStrategy(newScheme(t))
	old := newWorkspaceType()
	old.Status.VirtualWorkspaces = []tenancyv1alpha1.VirtualWorkspace{initializingVW}

	updated := old.DeepCopy()
	updated.Status = tenancyv1alpha1.WorkspaceTypeStatus{}
	updated.Spec.Terminator = true
	strategy.PrepareForUpdate(context.Background(), updated, old)

	if !apiequality.Semantic.DeepEqual(updated.Status, old.Status) {
		t.Errorf("status = %+v, want the old %+v", updated.Status, old.Status)
	}
	if updated.Generation != old.Generation+1 {
		t.Errorf("generation = %d, want %d after a spec change", updated.Generation, old.Generation+1)
	}
}

func TestStatusPrepareForUpdateKeepsSpecAndMetadata(t *testing.T) {
	strategy := NewStatusStrategy(NewStrategy(newScheme(t)))
	old := newWorkspaceType()
	updated := old.DeepCopy()
	updated.Annotations = map[string]string{"a": "b"}
	updated.Spec.Initializer = false
	updated.Status.VirtualWorkspaces = []tenancyv1alpha1.VirtualWorkspace{initializingVW}

	strategy.PrepareForUpdate(context.Background(), updated, old)

	if len(updated.Annotations) != 0 || !updated.Spec.Initializer {
		t.Errorf("metadata or spec changed through the status subresource: %+v", updated)
	}
	if len(updated.Status.VirtualWorkspaces) != 1 {
		t.Errorf("status = %+v, want the new one", updated.Status)
	}
	if errs := strategy.ValidateUpdate(context.Background(), updated, old); len(errs) != 0 {
		t.Errorf("unexpected errors: %v", errs)
	}
}

func TestValidationErrorsAreReturned(t *testing.T) {
	strategy := NewStrategy(newScheme(t))
	ctx := context.Background()

	reserved := newWorkspaceType()
	reserved.Name = "any"
	strategy.PrepareForCreate(ctx, reserved)
	if errs := strategy.Validate(ctx, reserved); len(errs) == 0 || errs[0].Field != "metadata.name" {
		t.Errorf("errors = %v, want one on metadata.name", errs)
	}

	old := newWorkspaceType()
	strategy.PrepareForCreate(ctx, old)
	badChild := old.DeepCopy()
	badChild.Spec.DefaultChildWorkspaceType = &tenancyv1alpha1.WorkspaceTypeReference{}
	strategy.PrepareForUpdate(ctx, badChild, old)
	if errs := strategy.ValidateUpdate(ctx, badChild, old); len(errs) == 0 || errs[0].Field != "spec.defaultChildWorkspaceType.name" {
		t.Errorf("errors = %v, want one on spec.defaultChildWorkspaceType.name", errs)
	}

	status := NewStatusStrategy(strategy)
	badURL := old.DeepCopy()
	badURL.Status.VirtualWorkspaces = []tenancyv1alpha1.VirtualWorkspace{{URL: "not a url"}}
	status.PrepareForUpdate(ctx, badURL, old)
	if errs := status.ValidateUpdate(ctx, badURL, old); len(errs) == 0 || errs[0].Field != "status.virtualWorkspaces[0].url" {
		t.Errorf("errors = %v, want one on status.virtualWorkspaces[0].url", errs)
	}
}

func TestResetFieldsSeparateSpecAndStatusWriters(t *testing.T) {
	strategy := NewStrategy(newScheme(t))
	gv := fieldpath.APIVersion("tenancy.kcp.io/v1alpha1")
	if got := strategy.GetResetFields()[gv]; got == nil || !got.Equals(fieldpath.NewSet(fieldpath.MakePathOrDie("status"))) {
		t.Errorf("main reset fields = %v, want status", got)
	}
	if got := NewStatusStrategy(strategy).GetResetFields()[gv]; got == nil || !got.Has(fieldpath.MakePathOrDie("spec")) || got.Has(fieldpath.MakePathOrDie("status")) {
		t.Errorf("status reset fields = %v, want spec and not status", got)
	}
}

func TestTableShowsNameAndAge(t *testing.T) {
	table, err := NewTableConvertor()
	if err != nil {
		t.Fatal(err)
	}
	wt := newWorkspaceType()
	wt.CreationTimestamp = metav1.NewTime(time.Now().Add(-3 * 24 * time.Hour))

	out, err := table.ConvertToTable(context.Background(), wt, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range out.ColumnDefinitions {
		names = append(names, c.Name)
	}
	if want := []string{"Name", "Age"}; !apiequality.Semantic.DeepEqual(names, want) {
		t.Errorf("columns = %v, want %v", names, want)
	}
	if want := []interface{}{"team", "3d"}; len(out.Rows) != 1 || !apiequality.Semantic.DeepEqual(out.Rows[0].Cells, want) {
		t.Errorf("rows = %v, want one with cells %v", out.Rows, want)
	}
}

func TestFieldSelectorMatchesName(t *testing.T) {
	wt := newWorkspaceType()
	for name, want := range map[string]bool{"team": true, "org": false} {
		predicate := Matcher(labels.Everything(), fields.OneTermEqualSelector("metadata.name", name))
		if got, err := predicate.Matches(wt); err != nil || got != want {
			t.Errorf("metadata.name=%s: matches = %v, err = %v, want %v", name, got, err, want)
		}
	}
}

func TestNewRESTServesClusterScopedResourceInCategoryKCP(t *testing.T) {
	getter := &registrytest.RESTOptionsGetter{}
	main, statusREST, err := NewREST(newScheme(t), getter)
	if err != nil {
		t.Fatal(err)
	}
	if main.NamespaceScoped() {
		t.Error("workspacetypes are namespaced, want cluster-scoped")
	}
	if got := main.Categories(); len(got) != 1 || got[0] != "kcp" {
		t.Errorf("categories = %v, want [kcp]", got)
	}
	if got := main.GetSingularName(); got != "workspacetype" {
		t.Errorf("singular name = %q", got)
	}
	if _, ok := statusREST.New().(*tenancyv1alpha1.WorkspaceType); !ok {
		t.Errorf("status New() = %T", statusREST.New())
	}
	if len(getter.Requested) != 1 || getter.Requested[0] != tenancyv1alpha1.Resource("workspacetypes") {
		t.Errorf("requested options for %v", getter.Requested)
	}
}
