package kcpstrategy

import (
	"context"
	"strings"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/registry/registrytest"
)

// testStrategy is a minimal strategy for Shards built on ClusterScoped.
type testStrategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	ClusterScoped
	resetPaths []string
}

func (s testStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return ResetFields(corev1alpha1.SchemeGroupVersion, s.resetPaths...)
}
func (testStrategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (testStrategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}
func (testStrategy) Validate(context.Context, runtime.Object) field.ErrorList         { return nil }
func (testStrategy) ValidateUpdate(context.Context, runtime.Object, runtime.Object) field.ErrorList {
	return nil
}

func TestClusterScoped(t *testing.T) {
	var s ClusterScoped
	ctx := context.Background()
	obj := &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: "alpha"}}
	s.Canonicalize(obj)
	if s.NamespaceScoped() {
		t.Error("NamespaceScoped() = true, want false")
	}
	if s.AllowCreateOnUpdate(ctx) {
		t.Error("AllowCreateOnUpdate() = true, want false")
	}
	if !s.AllowUnconditionalUpdate(ctx) {
		t.Error("AllowUnconditionalUpdate() = false, want true")
	}
	if w := s.WarningsOnCreate(ctx, obj); w != nil {
		t.Errorf("WarningsOnCreate() = %v, want none", w)
	}
	if w := s.WarningsOnUpdate(ctx, obj, obj); w != nil {
		t.Errorf("WarningsOnUpdate() = %v, want none", w)
	}
	if obj.Name != "alpha" {
		t.Errorf("Canonicalize changed the object: %+v", obj)
	}
}

func TestResetFields(t *testing.T) {
	gv := fieldpath.APIVersion("core.kcp.io/v1alpha1")
	main := ResetFields(corev1alpha1.SchemeGroupVersion, "status")
	if len(main) != 1 || main[gv] == nil || !main[gv].Equals(fieldpath.NewSet(fieldpath.MakePathOrDie("status"))) {
		t.Errorf("main reset fields = %v, want status of %s", main, gv)
	}
	status := ResetFields(corev1alpha1.SchemeGroupVersion, "metadata", "spec")
	want := fieldpath.NewSet(fieldpath.MakePathOrDie("metadata"), fieldpath.MakePathOrDie("spec"))
	if len(status) != 1 || status[gv] == nil || !status[gv].Equals(want) {
		t.Errorf("status reset fields = %v, want metadata and spec of %s", status, gv)
	}
}

func TestKeepOldMetadataKeepsNewManagedFields(t *testing.T) {
	old := metav1.ObjectMeta{Name: "alpha", Labels: map[string]string{"a": "b"}, Generation: 2,
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "spec-writer"}}}
	updated := *old.DeepCopy()
	updated.Labels["a"] = "changed"
	updated.Generation = 7
	updated.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "status-writer", Subresource: "status"}}

	KeepOldMetadata(&updated, &old)

	if updated.Labels["a"] != "b" || updated.Generation != 2 {
		t.Errorf("metadata = %+v, want the old one", updated)
	}
	if len(updated.ManagedFields) != 1 || updated.ManagedFields[0].Manager != "status-writer" {
		t.Errorf("managed fields = %v, want those of the status update", updated.ManagedFields)
	}
	updated.Labels["a"] = "again"
	if old.Labels["a"] != "b" {
		t.Error("the kept metadata shares its labels with the old object")
	}
}

func TestBumpGenerationOnSpecChange(t *testing.T) {
	old := metav1.ObjectMeta{Generation: 3}
	spec := corev1alpha1.ShardSpec{BaseURL: "https://alpha.example"}

	same := metav1.ObjectMeta{Generation: 3}
	BumpGenerationOnSpecChange(&same, &old, spec, spec)
	if same.Generation != 3 {
		t.Errorf("generation = %d without a spec change, want 3", same.Generation)
	}

	changed := metav1.ObjectMeta{Generation: 3}
	BumpGenerationOnSpecChange(&changed, &old, corev1alpha1.ShardSpec{BaseURL: "https://beta.example"}, spec)
	if changed.Generation != 4 {
		t.Errorf("generation = %d after a spec change, want 4", changed.Generation)
	}
}

func TestGetAttrsAndMatcher(t *testing.T) {
	shard := &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: "alpha", Labels: map[string]string{"region": "eu"}}}
	l, f, err := GetAttrs(shard)
	if err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(l, labels.Set{"region": "eu"}) || !apiequality.Semantic.DeepEqual(f, fields.Set{"metadata.name": "alpha"}) {
		t.Errorf("attrs = %v, %v", l, f)
	}
	for name, want := range map[string]bool{"alpha": true, "beta": false} {
		predicate := Matcher(labels.Everything(), fields.OneTermEqualSelector("metadata.name", name))
		if got, err := predicate.Matches(shard); err != nil || got != want {
			t.Errorf("metadata.name=%s: matches = %v, err = %v, want %v", name, got, err, want)
		}
	}
	predicate := Matcher(labels.SelectorFromSet(labels.Set{"region": "us"}), fields.Everything())
	if got, err := predicate.Matches(shard); err != nil || got {
		t.Errorf("region=us: matches = %v, err = %v, want false", got, err)
	}
	if _, _, err := GetAttrs(&metav1.Status{}); err == nil || !strings.Contains(err.Error(), "*v1.Status") {
		t.Errorf("err = %v for an object without metadata, want one naming the type", err)
	}
}

func TestNewRESTAssemblesStoreAndStatusSubresource(t *testing.T) {
	scheme := runtime.NewScheme() // NewREST never types objects
	strategy := &testStrategy{ObjectTyper: scheme, NameGenerator: names.SimpleNameGenerator, resetPaths: []string{"status"}}
	statusStrategy := testStrategy{ObjectTyper: scheme, NameGenerator: names.SimpleNameGenerator, resetPaths: []string{"metadata", "spec"}}
	getter := &registrytest.RESTOptionsGetter{}
	main, statusREST, err := NewREST(Kind{
		NewFunc:          func() runtime.Object { return &corev1alpha1.Shard{} },
		NewListFunc:      func() runtime.Object { return &corev1alpha1.ShardList{} },
		Resource:         corev1alpha1.Resource("shards"),
		SingularResource: corev1alpha1.Resource("shard"),
		Strategy:         strategy,
		StatusStrategy:   statusStrategy,
	}, getter)
	if err != nil {
		t.Fatal(err)
	}
	if main.NamespaceScoped() {
		t.Error("the resource is namespaced, want cluster-scoped")
	}
	if got := main.Categories(); !apiequality.Semantic.DeepEqual(got, []string{"kcp"}) {
		t.Errorf("categories = %v, want [kcp]", got)
	}
	if got := main.GetSingularName(); got != "shard" {
		t.Errorf("singular name = %q, want shard", got)
	}
	if _, ok := main.New().(*corev1alpha1.Shard); !ok {
		t.Errorf("New() = %T", main.New())
	}
	if _, ok := main.NewList().(*corev1alpha1.ShardList); !ok {
		t.Errorf("NewList() = %T", main.NewList())
	}
	if main.CreateStrategy != strategy || main.UpdateStrategy != strategy || main.DeleteStrategy != strategy || main.ResetFieldsStrategy != strategy {
		t.Error("the main store does not use the strategy for every write")
	}
	if main.PredicateFunc == nil || main.TableConvertor == nil {
		t.Error("the main store has no predicate or table convertor")
	}
	gv := fieldpath.APIVersion("core.kcp.io/v1alpha1")
	if got := statusREST.GetResetFields()[gv]; got == nil || !got.Has(fieldpath.MakePathOrDie("spec")) || got.Has(fieldpath.MakePathOrDie("status")) {
		t.Errorf("status reset fields = %v, want those of the status strategy", got)
	}
	if _, ok := statusREST.New().(*corev1alpha1.Shard); !ok {
		t.Errorf("status New() = %T", statusREST.New())
	}
	if len(getter.Requested) != 1 || getter.Requested[0] != corev1alpha1.Resource("shards") {
		t.Errorf("requested options for %v", getter.Requested)
	}

	table, err := main.ConvertToTable(context.Background(), &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: "alpha"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(table.ColumnDefinitions) != 1 || table.ColumnDefinitions[0].Name != "Name" {
		t.Errorf("columns = %v, want only Name without table columns", table.ColumnDefinitions)
	}
}
