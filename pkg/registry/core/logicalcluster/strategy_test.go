package logicalcluster

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
	"github.com/shardplane/shardplane/pkg/registry/registrytest"
)

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1alpha1.Install(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

func newLogicalCluster() *corev1alpha1.LogicalCluster {
	return &corev1alpha1.LogicalCluster{
		ObjectMeta: metav1.ObjectMeta{Name: corev1alpha1.LogicalClusterName, ResourceVersion: "1"},
		Spec: corev1alpha1.LogicalClusterSpec{
			Initializers: []corev1alpha1.LogicalClusterInitializer{"root:universal", "system:apibindings"},
			Terminators:  []corev1alpha1.LogicalClusterTerminator{"root:team"},
		},
	}
}

func TestPrepareForCreateDefaultsPhaseCopiesInitializersAndAddsFinalizer(t *testing.T) {
	strategy := NewStrategy(newScheme(t))
	lc := newLogicalCluster()
	lc.Status.URL = "https://shard.example/clusters/abc"

	strategy.PrepareForCreate(context.Background(), lc)

	if lc.Status.Phase != corev1alpha1.LogicalClusterPhaseScheduling {
		t.Errorf("phase = %q, want Scheduling", lc.Status.Phase)
	}
	if lc.Status.URL != "https://shard.example/clusters/abc" {
		t.Errorf("status URL was reset to %q; the system creates LogicalClusters with their status", lc.Status.URL)
	}
	if !apiequality.Semantic.DeepEqual(lc.Status.Initializers, lc.Spec.Initializers) {
		t.Errorf("status initializers = %v, want the spec's %v", lc.Status.Initializers, lc.Spec.Initializers)
	}
	lc.Status.Initializers[0] = "changed:changed"
	if lc.Spec.Initializers[0] == "changed:changed" {
		t.Error("status initializers share their backing array with the spec")
	}
	if len(lc.Status.Terminators) != 0 {
		t.Errorf("status terminators = %v, want none before termination starts", lc.Status.Terminators)
	}
	if want := []string{corev1alpha1.LogicalClusterDeletionFinalizer}; !apiequality.Semantic.DeepEqual(lc.Finalizers, want) {
		t.Errorf("finalizers = %v, want %v", lc.Finalizers, want)
	}
	if lc.Generation != 1 {
		t.Errorf("generation = %d, want 1", lc.Generation)
	}
}

func TestPrepareForCreateKeepsGivenStatus(t *testing.T) {
	strategy := NewStrategy(newScheme(t))
	lc := newLogicalCluster()
	lc.Finalizers = []string{corev1alpha1.LogicalClusterDeletionFinalizer}
	lc.Status.Phase = corev1alpha1.LogicalClusterPhaseInitializing
	lc.Status.Initializers = []corev1alpha1.LogicalClusterInitializer{"system:apibindings"}

	strategy.PrepareForCreate(context.Background(), lc)

	if lc.Status.Phase != corev1alpha1.LogicalClusterPhaseInitializing {
		t.Errorf("phase = %q, want the given Initializing", lc.Status.Phase)
	}
	if want := []corev1alpha1.LogicalClusterInitializer{"system:apibindings"}; !apiequality.Semantic.DeepEqual(lc.Status.Initializers, want) {
		t.Errorf("status initializers = %v, want the given %v", lc.Status.Initializers, want)
	}
	if len(lc.Finalizers) != 1 {
		t.Errorf("finalizers = %v, want the deletion finalizer once", lc.Finalizers)
	}
}

func TestPrepareForUpdateKeepsStatusAndBumpsGenerationOnSpecChange(t *testing.T) {
	strategy := NewStrategy(newScheme(t))
	old := newLogicalCluster()
	old.Generation = 3
	old.Status.Phase = corev1alpha1.LogicalClusterPhaseReady

	updated := old.DeepCopy()
	updated.Status.Phase = corev1alpha1.LogicalClusterPhaseDeleting
	strategy.PrepareForUpdate(context.Background(), updated, old)
	if updated.Status.Phase != corev1alpha1.LogicalClusterPhaseReady {
		t.Errorf("phase = %q, want the old Ready", updated.Status.Phase)
	}
	if updated.Generation != 3 {
		t.Errorf("generation = %d after a status-only change, want 3", updated.Generation)
	}

	updated = old.DeepCopy()
	updated.Spec.DirectlyDeletable = true
	strategy.PrepareForUpdate(context.Background(), updated, old)
	if updated.Generation != 4 {
		t.Errorf("generation = %d after a spec change, want 4", updated.Generation)
	}
}

func TestStatusPrepareForUpdateKeepsSpecAndMetadata(t *testing.T) {
	strategy := NewStatusStrategy(NewStrategy(newScheme(t)))
	old := newLogicalCluster()
	old.Labels = map[string]string{"a": "b"}

	updated := old.DeepCopy()
	updated.Labels["a"] = "changed"
	updated.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "status-writer", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"}}
	updated.Spec.DirectlyDeletable = true
	updated.Status.Phase = corev1alpha1.LogicalClusterPhaseReady
	updated.Status.URL = "https://shard.example/clusters/abc"

	strategy.PrepareForUpdate(context.Background(), updated, old)

	if updated.Labels["a"] != "b" {
		t.Errorf("label a = %q, want the old b", updated.Labels["a"])
	}
	if updated.Spec.DirectlyDeletable {
		t.Error("spec changed through the status subresource")
	}
	if len(updated.ManagedFields) != 1 || updated.ManagedFields[0].Manager != "status-writer" {
		t.Errorf("managed fields = %v, want those of the status update", updated.ManagedFields)
	}
	if updated.Status.Phase != corev1alpha1.LogicalClusterPhaseReady || updated.Status.URL == "" {
		t.Errorf("status = %+v, want the new one", updated.Status)
	}
	if errs := strategy.ValidateUpdate(context.Background(), updated, old); len(errs) != 0 {
		t.Errorf("unexpected errors: %v", errs)
	}
}

func TestValidationErrorsAreReturned(t *testing.T) {
	strategy := NewStrategy(newScheme(t))
	ctx := context.Background()

	wrongName := newLogicalCluster()
	wrongName.Name = "other"
	strategy.PrepareForCreate(ctx, wrongName)
	if errs := strategy.Validate(ctx, wrongName); len(errs) == 0 || errs[0].Field != "metadata.name" {
		t.Errorf("errors = %v, want one on metadata.name", errs)
	}

	valid := newLogicalCluster()
	strategy.PrepareForCreate(ctx, valid)
	if errs := strategy.Validate(ctx, valid); len(errs) != 0 {
		t.Errorf("unexpected errors: %v", errs)
	}

	changed := valid.DeepCopy()
	changed.Spec.Initializers = nil
	strategy.PrepareForUpdate(ctx, changed, valid)
	if errs := strategy.ValidateUpdate(ctx, changed, valid); len(errs) == 0 || errs[0].Field != "spec.initializers" {
		t.Errorf("errors = %v, want one on spec.initializers", errs)
	}

	status := NewStatusStrategy(strategy)
	badPhase := valid.DeepCopy()
	badPhase.Status.Phase = "Sleeping"
	status.PrepareForUpdate(ctx, badPhase, valid)
	if errs := status.ValidateUpdate(ctx, badPhase, valid); len(errs) == 0 || errs[0].Field != "status.phase" {
		t.Errorf("errors = %v, want one on status.phase", errs)
	}
}

func TestResetFieldsSeparateSpecAndStatusWriters(t *testing.T) {
	strategy := NewStrategy(newScheme(t))
	gv := fieldpath.APIVersion("core.kcp.io/v1alpha1")
	if got := strategy.GetResetFields()[gv]; got == nil || !got.Equals(fieldpath.NewSet(fieldpath.MakePathOrDie("status"))) {
		t.Errorf("main reset fields = %v, want status", got)
	}
	if got := NewStatusStrategy(strategy).GetResetFields()[gv]; got == nil || !got.Has(fieldpath.MakePathOrDie("spec")) || got.Has(fieldpath.MakePathOrDie("status")) {
		t.Errorf("status reset fields = %v, want spec and not status", got)
	}
}

func TestTableShowsPhaseURLAndAge(t *testing.T) {
	table, err := NewTableConvertor()
	if err != nil {
		t.Fatal(err)
	}
	lc := newLogicalCluster()
	lc.CreationTimestamp = metav1.NewTime(time.Now().Add(-2 * time.Hour))
	lc.Status.Phase = corev1alpha1.LogicalClusterPhaseReady
	lc.Status.URL = "https://shard.example/clusters/abc"

	out, err := table.ConvertToTable(context.Background(), lc, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range out.ColumnDefinitions {
		names = append(names, c.Name)
	}
	if want := []string{"Name", "Phase", "URL", "Age"}; !apiequality.Semantic.DeepEqual(names, want) {
		t.Errorf("columns = %v, want %v", names, want)
	}
	if len(out.Rows) != 1 {
		t.Fatalf("rows = %d, want 1", len(out.Rows))
	}
	want := []interface{}{"cluster", "Ready", "https://shard.example/clusters/abc", "120m"}
	if got := out.Rows[0].Cells; !apiequality.Semantic.DeepEqual(got, want) {
		t.Errorf("cells = %v, want %v", got, want)
	}
}

func TestFieldSelectorMatchesName(t *testing.T) {
	lc := newLogicalCluster()
	for name, want := range map[string]bool{"cluster": true, "other": false} {
		predicate := Matcher(labels.Everything(), fields.OneTermEqualSelector("metadata.name", name))
		if got, err := predicate.Matches(lc); err != nil || got != want {
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
		t.Error("logicalclusters are namespaced, want cluster-scoped")
	}
	if got := main.Categories(); len(got) != 1 || got[0] != "kcp" {
		t.Errorf("categories = %v, want [kcp]", got)
	}
	if got := main.GetSingularName(); got != "logicalcluster" {
		t.Errorf("singular name = %q", got)
	}
	if _, ok := statusREST.New().(*corev1alpha1.LogicalCluster); !ok {
		t.Errorf("status New() = %T", statusREST.New())
	}
	if statusREST.GetResetFields() == nil {
		t.Error("status subresource has no reset fields")
	}
	if len(getter.Requested) != 1 || getter.Requested[0] != corev1alpha1.Resource("logicalclusters") {
		t.Errorf("requested options for %v", getter.Requested)
	}
}
