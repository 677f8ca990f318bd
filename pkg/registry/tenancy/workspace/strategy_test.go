package workspace

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

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
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

func newWorkspace() *tenancyv1alpha1.Workspace {
	return &tenancyv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a", ResourceVersion: "1"},
		Spec: tenancyv1alpha1.WorkspaceSpec{
			Type: &tenancyv1alpha1.WorkspaceTypeReference{Name: "team", Path: "root"},
		},
	}
}

func TestPrepareForCreateResetsStatusAddsFinalizerAndPhaseLabel(t *testing.T) {
	strategy := NewStrategy(newScheme(t))
	ws := newWorkspace()
	ws.Status.Phase = corev1alpha1.LogicalClusterPhaseReady
	ws.Status.Initializers = []corev1alpha1.LogicalClusterInitializer{"root:team"}
	ws.Labels = map[string]string{tenancyv1alpha1.WorkspacePhaseLabel: "Ready", "team": "a"}

	strategy.PrepareForCreate(context.Background(), ws)

	if want := (tenancyv1alpha1.WorkspaceStatus{Phase: corev1alpha1.LogicalClusterPhaseScheduling}); !apiequality.Semantic.DeepEqual(ws.Status, want) {
		t.Errorf("status = %+v, want %+v", ws.Status, want)
	}
	if want := []string{tenancyv1alpha1.LogicalClusterFinalizer}; !apiequality.Semantic.DeepEqual(ws.Finalizers, want) {
		t.Errorf("finalizers = %v, want %v", ws.Finalizers, want)
	}
	if want := map[string]string{tenancyv1alpha1.WorkspacePhaseLabel: "Scheduling", "team": "a"}; !apiequality.Semantic.DeepEqual(ws.Labels, want) {
		t.Errorf("labels = %v, want %v", ws.Labels, want)
	}
	if errs := strategy.Validate(context.Background(), ws); len(errs) != 0 {
		t.Errorf("unexpected errors: %v", errs)
	}

	strategy.PrepareForCreate(context.Background(), ws)
	if len(ws.Finalizers) != 1 {
		t.Errorf("finalizers = %v, want the finalizer once", ws.Finalizers)
	}
}

func TestPrepareForCreateGivesAMountedWorkspaceNoFinalizer(t *testing.T) {
	ws := newWorkspace()
	ws.Spec.Type = nil
	ws.Spec.Mount = &tenancyv1alpha1.Mount{Reference: tenancyv1alpha1.ObjectReference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: "proxy-cluster"}}
	NewStrategy(newScheme(t)).PrepareForCreate(context.Background(), ws)
	if len(ws.Finalizers) != 0 {
		t.Errorf("finalizers %v: a mounted workspace has no logical cluster to wait for", ws.Finalizers)
	}
}

func TestPrepareForUpdateKeepsStatusAndPhaseLabel(t *testing.T) {
	strategy := NewStrategy(newScheme(t))
	old := newWorkspace()
	strategy.PrepareForCreate(context.Background(), old)
	old.Status.Phase = corev1alpha1.LogicalClusterPhaseReady
	old.Labels[tenancyv1alpha1.WorkspacePhaseLabel] = "Ready"

	updated := old.DeepCopy()
	updated.Status.Phase = corev1alpha1.LogicalClusterPhaseDeleting
	updated.Labels[tenancyv1alpha1.WorkspacePhaseLabel] = "Deleting"
	updated.Spec.URL = "https://proxy.example/clusters/root:team-a"
	strategy.PrepareForUpdate(context.Background(), updated, old)

	if updated.Status.Phase != corev1alpha1.LogicalClusterPhaseReady {
		t.Errorf("phase = %q, want the old Ready", updated.Status.Phase)
	}
	if got := updated.Labels[tenancyv1alpha1.WorkspacePhaseLabel]; got != "Ready" {
		t.Errorf("phase label = %q, want Ready", got)
	}
	if updated.Generation != old.Generation+1 {
		t.Errorf("generation = %d, want %d after a spec change", updated.Generation, old.Generation+1)
	}
}

func TestStatusUpdateMovesPhaseLabelAndKeepsSpec(t *testing.T) {
	strategy := NewStatusStrategy(NewStrategy(newScheme(t)))
	old := newWorkspace()
	NewStrategy(newScheme(t)).PrepareForCreate(context.Background(), old)

	updated := old.DeepCopy()
	updated.Status.Phase = corev1alpha1.LogicalClusterPhaseInitializing
	updated.Spec.Type = &tenancyv1alpha1.WorkspaceTypeReference{Name: "universal"}
	updated.Finalizers = nil
	strategy.PrepareForUpdate(context.Background(), updated, old)

	if got := updated.Labels[tenancyv1alpha1.WorkspacePhaseLabel]; got != "Initializing" {
		t.Errorf("phase label = %q, want Initializing", got)
	}
	if got := old.Labels[tenancyv1alpha1.WorkspacePhaseLabel]; got != "Scheduling" {
		t.Errorf("the old object's phase label changed to %q", got)
	}
	if updated.Spec.Type.Name != "team" {
		t.Errorf("spec type = %v, want the old team", updated.Spec.Type)
	}
	if len(updated.Finalizers) != 1 {
		t.Errorf("finalizers = %v, want the old ones", updated.Finalizers)
	}
	if errs := strategy.ValidateUpdate(context.Background(), updated, old); len(errs) != 0 {
		t.Errorf("unexpected errors: %v", errs)
	}
}

func TestValidationErrorsAreReturned(t *testing.T) {
	strategy := NewStrategy(newScheme(t))
	ctx := context.Background()

	badType := newWorkspace()
	badType.Spec.Type.Name = "Not_A_Name"
	strategy.PrepareForCreate(ctx, badType)
	if errs := strategy.Validate(ctx, badType); len(errs) == 0 || errs[0].Field != "spec.type.name" {
		t.Errorf("errors = %v, want one on spec.type.name", errs)
	}

	old := newWorkspace()
	strategy.PrepareForCreate(ctx, old)
	retyped := old.DeepCopy()
	retyped.Spec.Type = &tenancyv1alpha1.WorkspaceTypeReference{Name: "universal", Path: "root"}
	strategy.PrepareForUpdate(ctx, retyped, old)
	if errs := strategy.ValidateUpdate(ctx, retyped, old); len(errs) == 0 || errs[0].Field != "spec.type" {
		t.Errorf("errors = %v, want one on spec.type", errs)
	}

	status := NewStatusStrategy(strategy)
	badPhase := old.DeepCopy()
	badPhase.Status.Phase = "Sleeping"
	status.PrepareForUpdate(ctx, badPhase, old)
	errs := status.ValidateUpdate(ctx, badPhase, old)
	found := false
	for _, err := range errs {
		found = found || err.Field == "status.phase"
	}
	if !found {
		t.Errorf("errors = %v, want one on status.phase", errs)
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

func TestTableShowsNameTypeRegionPhaseURLAge(t *testing.T) {
	table, err := NewTableConvertor()
	if err != nil {
		t.Fatal(err)
	}
	ws := newWorkspace()
	ws.CreationTimestamp = metav1.NewTime(time.Now().Add(-30 * time.Second))
	ws.Labels = map[string]string{"region": "eu"}
	ws.Spec.URL = "https://proxy.example/clusters/root:team-a"
	ws.Status.Phase = corev1alpha1.LogicalClusterPhaseReady
	unscheduled := newWorkspace()
	unscheduled.Name = "team-b"
	unscheduled.Spec.Type = nil

	list := &tenancyv1alpha1.WorkspaceList{Items: []tenancyv1alpha1.Workspace{*ws, *unscheduled}}
	out, err := table.ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range out.ColumnDefinitions {
		names = append(names, c.Name)
	}
	if want := []string{"Name", "Type", "Region", "Phase", "URL", "Age"}; !apiequality.Semantic.DeepEqual(names, want) {
		t.Errorf("columns = %v, want %v", names, want)
	}
	if len(out.Rows) != 2 {
		t.Fatalf("rows = %d, want 2", len(out.Rows))
	}
	if want := []interface{}{"team-a", "team", "eu", "Ready", "https://proxy.example/clusters/root:team-a", "30s"}; !apiequality.Semantic.DeepEqual(out.Rows[0].Cells, want) {
		t.Errorf("cells = %v, want %v", out.Rows[0].Cells, want)
	}
	if got := out.Rows[1].Cells; len(got) != 6 || got[0] != "team-b" || got[1] != nil {
		t.Errorf("cells of a workspace without type = %v, want team-b and empty type", got)
	}
}

func TestSelectorsMatchNameAndPhaseLabel(t *testing.T) {
	ws := newWorkspace()
	NewStrategy(newScheme(t)).PrepareForCreate(context.Background(), ws)
	for name, want := range map[string]bool{"team-a": true, "team-b": false} {
		predicate := Matcher(labels.Everything(), fields.OneTermEqualSelector("metadata.name", name))
		if got, err := predicate.Matches(ws); err != nil || got != want {
			t.Errorf("metadata.name=%s: matches = %v, err = %v, want %v", name, got, err, want)
		}
	}
	predicate := Matcher(labels.SelectorFromSet(labels.Set{tenancyv1alpha1.WorkspacePhaseLabel: "Scheduling"}), fields.Everything())
	if got, err := predicate.Matches(ws); err != nil || !got {
		t.Errorf("phase label selector: matches = %v, err = %v", got, err)
	}
}

func TestNewRESTServesWorkspacesAsWS(t *testing.T) {
	getter := &registrytest.RESTOptionsGetter{}
	main, statusREST, err := NewREST(newScheme(t), getter)
	if err != nil {
		t.Fatal(err)
	}
	if main.NamespaceScoped() {
		t.Error("workspaces are namespaced, want cluster-scoped")
	}
	if got := main.ShortNames(); !apiequality.Semantic.DeepEqual(got, []string{"ws"}) {
		t.Errorf("short names = %v, want [ws]", got)
	}
	if got := main.Categories(); len(got) != 1 || got[0] != "kcp" {
		t.Errorf("categories = %v, want [kcp]", got)
	}
	if got := main.GetSingularName(); got != "workspace" {
		t.Errorf("singular name = %q", got)
	}
	if _, ok := statusREST.New().(*tenancyv1alpha1.Workspace); !ok {
		t.Errorf("status New() = %T", statusREST.New())
	}
	if len(getter.Requested) != 1 || getter.Requested[0] != tenancyv1alpha1.Resource("workspaces") {
		t.Errorf("requested options for %v", getter.Requested)
	}
}
