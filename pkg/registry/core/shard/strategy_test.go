package shard

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
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

func newShard() *corev1alpha1.Shard {
	return &corev1alpha1.Shard{
		ObjectMeta: metav1.ObjectMeta{Name: "alpha", ResourceVersion: "1", Labels: map[string]string{"region": "eu"}},
		Spec:       corev1alpha1.ShardSpec{BaseURL: "https://alpha.example:6443"},
	}
}

func TestPrepareForCreateResetsStatusDefaultsURLsAndLabelsName(t *testing.T) {
	strategy := NewStrategy(newScheme(t))
	shard := newShard()
	shard.Status.Capacity = corev1.ResourceList{"logicalclusters": resource.MustParse("10")}

	strategy.PrepareForCreate(context.Background(), shard)

	if len(shard.Status.Capacity) != 0 {
		t.Errorf("status = %+v, want it reset", shard.Status)
	}
	if shard.Spec.ExternalURL != shard.Spec.BaseURL || shard.Spec.VirtualWorkspaceURL != shard.Spec.BaseURL {
		t.Errorf("spec = %+v, want the URLs defaulted to the base URL", shard.Spec)
	}
	if want := map[string]string{"region": "eu", corev1alpha1.ShardNameLabel: "alpha"}; !apiequality.Semantic.DeepEqual(shard.Labels, want) {
		t.Errorf("labels = %v, want %v", shard.Labels, want)
	}
	if errs := strategy.Validate(context.Background(), shard); len(errs) != 0 {
		t.Errorf("unexpected errors: %v", errs)
	}
}

func TestPrepareForUpdateKeepsStatusAndNameLabel(t *testing.T) {
	strategy := NewStrategy(newScheme(t))
	old := newShard()
	strategy.PrepareForCreate(context.Background(), old)
	old.Status.Capacity = corev1.ResourceList{"logicalclusters": resource.MustParse("10")}

	updated := old.DeepCopy()
	updated.Status = corev1alpha1.ShardStatus{}
	delete(updated.Labels, corev1alpha1.ShardNameLabel)
	updated.Spec.ExternalURL = "https://proxy.example"
	strategy.PrepareForUpdate(context.Background(), updated, old)

	if !apiequality.Semantic.DeepEqual(updated.Status, old.Status) {
		t.Errorf("status = %+v, want the old %+v", updated.Status, old.Status)
	}
	if updated.Labels[corev1alpha1.ShardNameLabel] != "alpha" {
		t.Errorf("labels = %v, want name=alpha", updated.Labels)
	}
	if updated.Generation != old.Generation+1 {
		t.Errorf("generation = %d, want %d after a spec change", updated.Generation, old.Generation+1)
	}
}

func TestStatusPrepareForUpdateKeepsSpecAndMetadata(t *testing.T) {
	strategy := NewStatusStrategy(NewStrategy(newScheme(t)))
	old := newShard()
	updated := old.DeepCopy()
	updated.Labels["region"] = "us"
	updated.Spec.BaseURL = "https://elsewhere.example"
	updated.Status.Capacity = corev1.ResourceList{"logicalclusters": resource.MustParse("10")}

	strategy.PrepareForUpdate(context.Background(), updated, old)

	if updated.Labels["region"] != "eu" || updated.Spec.BaseURL != old.Spec.BaseURL {
		t.Errorf("metadata or spec changed through the status subresource: %+v", updated)
	}
	if len(updated.Status.Capacity) != 1 {
		t.Errorf("status = %+v, want the new one", updated.Status)
	}
}

func TestValidationErrorsAreReturned(t *testing.T) {
	strategy := NewStrategy(newScheme(t))
	ctx := context.Background()

	noURL := newShard()
	noURL.Spec.BaseURL = ""
	strategy.PrepareForCreate(ctx, noURL)
	if errs := strategy.Validate(ctx, noURL); len(errs) == 0 || errs[0].Field != "spec.baseURL" {
		t.Errorf("errors = %v, want one on spec.baseURL", errs)
	}

	old := newShard()
	strategy.PrepareForCreate(ctx, old)
	badURL := old.DeepCopy()
	badURL.Spec.ExternalURL = "ftp://proxy"
	strategy.PrepareForUpdate(ctx, badURL, old)
	if errs := strategy.ValidateUpdate(ctx, badURL, old); len(errs) == 0 || errs[0].Field != "spec.externalURL" {
		t.Errorf("errors = %v, want one on spec.externalURL", errs)
	}

	status := NewStatusStrategy(strategy)
	negative := old.DeepCopy()
	negative.Status.Capacity = corev1.ResourceList{"logicalclusters": resource.MustParse("-1")}
	status.PrepareForUpdate(ctx, negative, old)
	if errs := status.ValidateUpdate(ctx, negative, old); len(errs) == 0 || errs[0].Field != "status.capacity[logicalclusters]" {
		t.Errorf("errors = %v, want one on status.capacity[logicalclusters]", errs)
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

func TestTableShowsRegionURLsCapacityReadinessAndAge(t *testing.T) {
	table, err := NewTableConvertor()
	if err != nil {
		t.Fatal(err)
	}
	shard := newShard()
	shard.CreationTimestamp = metav1.NewTime(time.Now().Add(-5 * time.Minute))
	shard.Spec.ExternalURL = "https://proxy.example"
	shard.Spec.ResourceLimits = &corev1alpha1.ShardResourceLimits{
		Soft: corev1.ResourceList{corev1alpha1.ResourceWorkspaces: resource.MustParse("8")},
		Hard: corev1.ResourceList{corev1alpha1.ResourceWorkspaces: resource.MustParse("10")},
	}
	shard.Status.Used = corev1.ResourceList{corev1alpha1.ResourceWorkspaces: resource.MustParse("3")}
	shard.Status.Conditions = conditionsv1alpha1.Conditions{
		{Type: corev1alpha1.ShardSchedulable, Status: corev1.ConditionFalse, Reason: corev1alpha1.ShardReasonCordoned},
		{Type: corev1alpha1.ShardReady, Status: corev1.ConditionTrue},
	}

	out, err := table.ConvertToTable(context.Background(), shard, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range out.ColumnDefinitions {
		names = append(names, c.Name)
	}
	if want := []string{"Name", "Region", "URL", "External URL", "Schedulable", "Ready", "Workspaces", "Soft", "Hard", "Age"}; !apiequality.Semantic.DeepEqual(names, want) {
		t.Errorf("columns = %v, want %v", names, want)
	}
	want := []interface{}{"alpha", "eu", "https://alpha.example:6443", "https://proxy.example", "False", "True", "3", "8", "10", "5m"}
	if len(out.Rows) != 1 || !apiequality.Semantic.DeepEqual(out.Rows[0].Cells, want) {
		t.Errorf("rows = %v, want one with cells %v", out.Rows, want)
	}
}

func TestFieldSelectorMatchesName(t *testing.T) {
	shard := newShard()
	for name, want := range map[string]bool{"alpha": true, "beta": false} {
		predicate := Matcher(labels.Everything(), fields.OneTermEqualSelector("metadata.name", name))
		if got, err := predicate.Matches(shard); err != nil || got != want {
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
		t.Error("shards are namespaced, want cluster-scoped")
	}
	if got := main.Categories(); len(got) != 1 || got[0] != "kcp" {
		t.Errorf("categories = %v, want [kcp]", got)
	}
	if got := main.GetSingularName(); got != "shard" {
		t.Errorf("singular name = %q", got)
	}
	if _, ok := statusREST.New().(*corev1alpha1.Shard); !ok {
		t.Errorf("status New() = %T", statusREST.New())
	}
	if len(getter.Requested) != 1 || getter.Requested[0] != corev1alpha1.Resource("shards") {
		t.Errorf("requested options for %v", getter.Requested)
	}
}
