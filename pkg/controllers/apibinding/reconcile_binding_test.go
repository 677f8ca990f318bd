package apibinding

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

const (
	provider logicalcluster.Name = "provider"
	consumer logicalcluster.Name = "consumer"
	identity                     = "abc123"
)

func widgetSchema(name, group, plural, kind string) *apisv1alpha1.APIResourceSchema {
	return &apisv1alpha1.APIResourceSchema{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: apisv1alpha1.APIResourceSchemaSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.TrimSuffix(plural, "s"), Kind: kind, ListKind: kind + "List"},
			Scope: apiextensionsv1.ClusterScoped,
			Versions: []apisv1alpha1.APIResourceVersion{
				{Name: "v1", Served: true, Storage: true},
				{Name: "v1beta1", Served: true},
			},
		},
	}
}

func widgetExport(hash string) *apisv1alpha2.APIExport {
	return &apisv1alpha2.APIExport{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets"},
		Spec: apisv1alpha2.APIExportSpec{Resources: []apisv1alpha2.ResourceSchema{
			{Name: "widgets", Group: "example.io", Schema: "v1.widgets.example.io"},
		}},
		Status: apisv1alpha2.APIExportStatus{IdentityHash: hash},
	}
}

func newBinding(name, path, export string) *apisv1alpha2.APIBinding {
	return &apisv1alpha2.APIBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{logicalcluster.AnnotationKey: string(consumer)}},
		Spec:       apisv1alpha2.APIBindingSpec{Reference: apisv1alpha2.BindingReference{Export: &apisv1alpha2.ExportBindingReference{Path: path, Name: export}}},
	}
}

// world is what the reconciler reads.
type world struct {
	exports  map[string]*apisv1alpha2.APIExport          // "cluster|name"
	schemas  map[string]*apisv1alpha1.APIResourceSchema  // "cluster|name"
	crds     []*apiextensionsv1.CustomResourceDefinition // in consumer
	bindings []*apisv1alpha2.APIBinding                  // in consumer
	// remote clusters are hosted by other shards; cacheDown is why the
	// cache server cannot be read.
	remote    map[logicalcluster.Name]bool
	cacheDown error
}

func (w *world) reconciler() *bindingReconciler {
	return &bindingReconciler{
		resolvePath: func(p logicalcluster.Path) (logicalcluster.Name, bool) {
			if p == "root:provider" {
				return provider, true
			}
			return "", false
		},
		getAPIExport: func(cluster logicalcluster.Name, name string) *apisv1alpha2.APIExport {
			return w.exports[string(cluster)+"|"+name]
		},
		getAPIResourceSchema: func(cluster logicalcluster.Name, name string) *apisv1alpha1.APIResourceSchema {
			return w.schemas[string(cluster)+"|"+name]
		},
		listCRDs: func(cluster logicalcluster.Name) []*apiextensionsv1.CustomResourceDefinition {
			if cluster != consumer {
				return nil
			}
			return w.crds
		},
		listAPIBindings: func(cluster logicalcluster.Name) []*apisv1alpha2.APIBinding {
			if cluster != consumer {
				return nil
			}
			return w.bindings
		},
		hosted:           func(c logicalcluster.Name) bool { return !w.remote[c] },
		cacheUnreachable: func() error { return w.cacheDown },
		recent:           newRecentBindings(),
	}
}

func happyWorld() *world {
	return &world{
		exports: map[string]*apisv1alpha2.APIExport{"provider|widgets": widgetExport(identity)},
		schemas: map[string]*apisv1alpha1.APIResourceSchema{"provider|v1.widgets.example.io": widgetSchema("v1.widgets.example.io", "example.io", "widgets", "Widget")},
	}
}

func condition(t *testing.T, b *apisv1alpha2.APIBinding, ct conditionsv1alpha1.ConditionType) conditionsv1alpha1.Condition {
	t.Helper()
	c := b.Status.Conditions.Get(ct)
	if c == nil {
		t.Fatalf("no condition %s in %+v", ct, b.Status.Conditions)
	}
	return *c
}

func TestReconcileBinding(t *testing.T) {
	tests := []struct {
		name  string
		world func() *world
		// binding defaults to one referring to root:provider:widgets.
		binding func() *apisv1alpha2.APIBinding
		check   func(t *testing.T, b *apisv1alpha2.APIBinding)
	}{
		{
			name: "export missing: APIExportValid False naming the export, still Binding",
			world: func() *world {
				w := happyWorld()
				delete(w.exports, "provider|widgets")
				return w
			},
			check: func(t *testing.T, b *apisv1alpha2.APIBinding) {
				c := condition(t, b, apisv1alpha2.APIExportValid)
				if c.Status != corev1.ConditionFalse || c.Reason != apisv1alpha2.APIExportNotFoundReason || !strings.Contains(c.Message, "root:provider:widgets") {
					t.Errorf("APIExportValid = %+v", c)
				}
				if b.Status.Phase != apisv1alpha2.APIBindingPhaseBinding || b.Status.BoundResources != nil {
					t.Errorf("phase %q, bound %v", b.Status.Phase, b.Status.BoundResources)
				}
				if c := condition(t, b, apisv1alpha2.InitialBindingCompleted); c.Status != corev1.ConditionFalse {
					t.Errorf("InitialBindingCompleted = %+v", c)
				}
			},
		},
		{
			name:  "workspace of the export unknown: APIExportNotFound",
			world: happyWorld,
			binding: func() *apisv1alpha2.APIBinding {
				return newBinding("b", "root:nowhere", "widgets")
			},
			check: func(t *testing.T, b *apisv1alpha2.APIBinding) {
				c := condition(t, b, apisv1alpha2.APIExportValid)
				if c.Reason != apisv1alpha2.APIExportNotFoundReason || !strings.Contains(c.Message, "root:nowhere:widgets") {
					t.Errorf("APIExportValid = %+v", c)
				}
			},
		},
		{
			name: "export without identity: waiting",
			world: func() *world {
				w := happyWorld()
				w.exports["provider|widgets"] = widgetExport("")
				return w
			},
			check: func(t *testing.T, b *apisv1alpha2.APIBinding) {
				c := condition(t, b, apisv1alpha2.APIExportValid)
				if c.Status != corev1.ConditionFalse || c.Reason != MissingIdentityHashReason {
					t.Errorf("APIExportValid = %+v", c)
				}
				if b.Status.Phase != apisv1alpha2.APIBindingPhaseBinding {
					t.Errorf("phase %q", b.Status.Phase)
				}
			},
		},
		{
			name: "schema missing: APIExportValid False naming the schema",
			world: func() *world {
				w := happyWorld()
				w.schemas = nil
				return w
			},
			check: func(t *testing.T, b *apisv1alpha2.APIBinding) {
				c := condition(t, b, apisv1alpha2.APIExportValid)
				if c.Reason != apisv1alpha1.APIResourceSchemaInvalidReason || !strings.Contains(c.Message, "v1.widgets.example.io") {
					t.Errorf("APIExportValid = %+v", c)
				}
				if b.Status.Phase != apisv1alpha2.APIBindingPhaseBinding || b.Status.BoundResources != nil {
					t.Errorf("phase %q, bound %v", b.Status.Phase, b.Status.BoundResources)
				}
			},
		},
		{
			name: "schema defines another resource than the export says",
			world: func() *world {
				w := happyWorld()
				w.schemas["provider|v1.widgets.example.io"] = widgetSchema("v1.widgets.example.io", "example.io", "gadgets", "Gadget")
				return w
			},
			check: func(t *testing.T, b *apisv1alpha2.APIBinding) {
				c := condition(t, b, apisv1alpha2.APIExportValid)
				if c.Reason != apisv1alpha1.APIResourceSchemaInvalidReason || !strings.Contains(c.Message, "gadgets.example.io") {
					t.Errorf("APIExportValid = %+v", c)
				}
			},
		},
		{
			name: "conflict with a CRD: NamingConflicts, nothing bound",
			world: func() *world {
				w := happyWorld()
				w.crds = []*apiextensionsv1.CustomResourceDefinition{{
					ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.io"},
					Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.io", Names: apiextensionsv1.CustomResourceDefinitionNames{
						Plural: "widgets", Singular: "widget", Kind: "Widget"}},
				}}
				return w
			},
			check: func(t *testing.T, b *apisv1alpha2.APIBinding) {
				c := condition(t, b, apisv1alpha2.BindingUpToDate)
				if c.Status != corev1.ConditionFalse || c.Reason != apisv1alpha2.NamingConflictsReason || !strings.Contains(c.Message, "CustomResourceDefinition widgets.example.io") {
					t.Errorf("BindingUpToDate = %+v", c)
				}
				if c := condition(t, b, apisv1alpha2.InitialBindingCompleted); c.Reason != apisv1alpha2.NamingConflictsReason {
					t.Errorf("InitialBindingCompleted = %+v", c)
				}
				if b.Status.Phase != apisv1alpha2.APIBindingPhaseBinding || b.Status.BoundResources != nil {
					t.Errorf("phase %q, bound %v", b.Status.Phase, b.Status.BoundResources)
				}
			},
		},
		{
			name: "a CRD of another group with the same plural is no conflict",
			world: func() *world {
				w := happyWorld()
				w.crds = []*apiextensionsv1.CustomResourceDefinition{{
					ObjectMeta: metav1.ObjectMeta{Name: "widgets.other.io"},
					Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "other.io", Names: apiextensionsv1.CustomResourceDefinitionNames{
						Plural: "widgets", Singular: "widget", Kind: "Widget"}},
				}}
				return w
			},
			check: func(t *testing.T, b *apisv1alpha2.APIBinding) {
				if b.Status.Phase != apisv1alpha2.APIBindingPhaseBound {
					t.Errorf("phase %q, conditions %+v", b.Status.Phase, b.Status.Conditions)
				}
			},
		},
		{
			name: "conflict with a CRD's kind in the same group",
			world: func() *world {
				w := happyWorld()
				w.crds = []*apiextensionsv1.CustomResourceDefinition{{
					ObjectMeta: metav1.ObjectMeta{Name: "things.example.io"},
					Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.io", Names: apiextensionsv1.CustomResourceDefinitionNames{
						Plural: "things", Singular: "thing", Kind: "Widget"}},
				}}
				return w
			},
			check: func(t *testing.T, b *apisv1alpha2.APIBinding) {
				c := condition(t, b, apisv1alpha2.BindingUpToDate)
				if c.Reason != apisv1alpha2.NamingConflictsReason || !strings.Contains(c.Message, `spec.names.kind "Widget"`) {
					t.Errorf("BindingUpToDate = %+v", c)
				}
			},
		},
		{
			name: "conflict with another binding of another export",
			world: func() *world {
				w := happyWorld()
				other := newBinding("other", "root:elsewhere", "widgets")
				other.Status = apisv1alpha2.APIBindingStatus{Phase: apisv1alpha2.APIBindingPhaseBound, APIExportClusterName: "elsewhere", BoundResources: []apisv1alpha2.BoundAPIResource{{
					Group: "example.io", Resource: "widgets", Schema: apisv1alpha2.BoundAPIResourceSchema{Name: "v1.widgets.example.io", UID: "x", IdentityHash: "other-identity"},
				}}}
				w.bindings = []*apisv1alpha2.APIBinding{other}
				return w
			},
			check: func(t *testing.T, b *apisv1alpha2.APIBinding) {
				c := condition(t, b, apisv1alpha2.BindingUpToDate)
				if c.Reason != apisv1alpha2.NamingConflictsReason || !strings.Contains(c.Message, "APIBinding other") {
					t.Errorf("BindingUpToDate = %+v", c)
				}
				if b.Status.BoundResources != nil {
					t.Errorf("bound %v", b.Status.BoundResources)
				}
			},
		},
		{
			name: "another binding of the same export is no conflict",
			world: func() *world {
				w := happyWorld()
				other := newBinding("other", "root:provider", "widgets")
				other.Status = apisv1alpha2.APIBindingStatus{Phase: apisv1alpha2.APIBindingPhaseBound, APIExportClusterName: "provider", BoundResources: []apisv1alpha2.BoundAPIResource{{
					Group: "example.io", Resource: "widgets", Schema: apisv1alpha2.BoundAPIResourceSchema{Name: "v1.widgets.example.io", UID: "uid-v1.widgets.example.io", IdentityHash: identity},
				}}}
				w.bindings = []*apisv1alpha2.APIBinding{other}
				return w
			},
			check: func(t *testing.T, b *apisv1alpha2.APIBinding) {
				if b.Status.Phase != apisv1alpha2.APIBindingPhaseBound {
					t.Errorf("phase %q, conditions %+v", b.Status.Phase, b.Status.Conditions)
				}
			},
		},
		{
			name:  "happy path: Bound with the export's identity",
			world: happyWorld,
			check: func(t *testing.T, b *apisv1alpha2.APIBinding) {
				if b.Status.Phase != apisv1alpha2.APIBindingPhaseBound || b.Status.APIExportClusterName != string(provider) {
					t.Errorf("phase %q, export cluster %q", b.Status.Phase, b.Status.APIExportClusterName)
				}
				want := apisv1alpha2.BoundAPIResource{Group: "example.io", Resource: "widgets",
					Schema:          apisv1alpha2.BoundAPIResourceSchema{Name: "v1.widgets.example.io", UID: "uid-v1.widgets.example.io", IdentityHash: identity},
					StorageVersions: []string{"v1"}}
				if len(b.Status.BoundResources) != 1 || b.Status.BoundResources[0].Schema != want.Schema ||
					b.Status.BoundResources[0].Group != want.Group || strings.Join(b.Status.BoundResources[0].StorageVersions, ",") != "v1" {
					t.Errorf("bound = %+v, want %+v", b.Status.BoundResources, want)
				}
				for _, ct := range []conditionsv1alpha1.ConditionType{apisv1alpha2.APIExportValid, apisv1alpha2.InitialBindingCompleted, apisv1alpha2.BindingUpToDate} {
					if c := condition(t, b, ct); c.Status != corev1.ConditionTrue {
						t.Errorf("%s = %+v", ct, c)
					}
				}
			},
		},
		{
			name: "a virtual resource is bound without storage versions",
			world: func() *world {
				w := happyWorld()
				w.exports["provider|widgets"].Spec.Resources[0].Storage = apisv1alpha2.ResourceSchemaStorage{Virtual: &apisv1alpha2.ResourceSchemaStorageVirtual{
					Reference: apisv1alpha2.TypedLocalObjectReference{Kind: "ClusterCachedResourceEndpointSlice", Name: "widgets"},
				}}
				return w
			},
			check: func(t *testing.T, b *apisv1alpha2.APIBinding) {
				if b.Status.Phase != apisv1alpha2.APIBindingPhaseBound || len(b.Status.BoundResources) != 1 || b.Status.BoundResources[0].StorageVersions != nil {
					t.Errorf("phase %q, bound %+v, want Bound without storage versions", b.Status.Phase, b.Status.BoundResources)
				}
			},
		},
		{
			name: "empty path binds the export of the binding's own workspace",
			world: func() *world {
				w := happyWorld()
				w.exports["consumer|widgets"] = widgetExport(identity)
				w.schemas["consumer|v1.widgets.example.io"] = w.schemas["provider|v1.widgets.example.io"]
				return w
			},
			binding: func() *apisv1alpha2.APIBinding {
				return newBinding("b", "", "widgets")
			},
			check: func(t *testing.T, b *apisv1alpha2.APIBinding) {
				if b.Status.Phase != apisv1alpha2.APIBindingPhaseBound || b.Status.APIExportClusterName != string(consumer) {
					t.Errorf("phase %q, export cluster %q", b.Status.Phase, b.Status.APIExportClusterName)
				}
			},
		},
		{
			name: "a bound binding whose export is deleted stays Bound with a warning",
			world: func() *world {
				w := happyWorld()
				delete(w.exports, "provider|widgets")
				return w
			},
			binding: func() *apisv1alpha2.APIBinding {
				b := newBinding("b", "root:provider", "widgets")
				b.Status = apisv1alpha2.APIBindingStatus{Phase: apisv1alpha2.APIBindingPhaseBound, APIExportClusterName: "provider", BoundResources: []apisv1alpha2.BoundAPIResource{{Group: "example.io", Resource: "widgets"}}}
				return b
			},
			check: func(t *testing.T, b *apisv1alpha2.APIBinding) {
				c := condition(t, b, apisv1alpha2.APIExportValid)
				if b.Status.Phase != apisv1alpha2.APIBindingPhaseBound || len(b.Status.BoundResources) != 1 || c.Severity != conditionsv1alpha1.ConditionSeverityWarning {
					t.Errorf("phase %q, bound %v, APIExportValid %+v", b.Status.Phase, b.Status.BoundResources, c)
				}
			},
		},
		{
			name:  "storage versions recorded before are kept",
			world: happyWorld,
			binding: func() *apisv1alpha2.APIBinding {
				b := newBinding("b", "root:provider", "widgets")
				b.Status = apisv1alpha2.APIBindingStatus{Phase: apisv1alpha2.APIBindingPhaseBound, BoundResources: []apisv1alpha2.BoundAPIResource{{Group: "example.io", Resource: "widgets", StorageVersions: []string{"v1alpha1"}}}}
				return b
			},
			check: func(t *testing.T, b *apisv1alpha2.APIBinding) {
				if got := strings.Join(b.Status.BoundResources[0].StorageVersions, ","); got != "v1,v1alpha1" {
					t.Errorf("storage versions %s", got)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBinding("b", "root:provider", "widgets")
			if tt.binding != nil {
				b = tt.binding()
			}
			var requeue loop.RequeueAfter
			if _, err := tt.world().reconciler().reconcile(context.Background(), consumer, b); err != nil && !errors.As(err, &requeue) {
				t.Fatal(err)
			}
			tt.check(t, b)
		})
	}
}

// An export another shard hosts cannot be found while the cache server is
// down: the binding says so and is retried, instead of calling the export
// missing; an export of this shard is judged as ever.
func TestReconcileBindingWaitsForTheCacheServer(t *testing.T) {
	down := errors.New("connection refused")
	w := happyWorld()
	delete(w.exports, "provider|widgets")
	w.remote = map[logicalcluster.Name]bool{provider: true}
	w.cacheDown = down
	b := newBinding("b", "root:provider", "widgets")
	_, err := w.reconciler().reconcile(context.Background(), consumer, b)
	var after loop.RequeueAfter
	if !errors.As(err, &after) || after <= 0 {
		t.Errorf("reconcile: %v, want a requeue", err)
	}
	c := condition(t, b, apisv1alpha2.APIExportValid)
	if c.Status != corev1.ConditionFalse || c.Reason != CacheServerUnreachableReason || !strings.Contains(c.Message, "connection refused") || !strings.Contains(c.Message, "root:provider:widgets") {
		t.Errorf("APIExportValid = %+v, want %s naming the export and the error", c, CacheServerUnreachableReason)
	}
	if b.Status.Phase != apisv1alpha2.APIBindingPhaseBinding {
		t.Errorf("phase %q, want Binding", b.Status.Phase)
	}

	// A workspace path nobody resolves, while the cache is down: the same.
	b = newBinding("b", "root:elsewhere", "widgets")
	if _, err := w.reconciler().reconcile(context.Background(), consumer, b); err == nil {
		t.Error("reconcile of an unresolvable path while the cache is down: no requeue")
	}
	if c := condition(t, b, apisv1alpha2.APIExportValid); c.Reason != CacheServerUnreachableReason {
		t.Errorf("APIExportValid = %+v", c)
	}

	// The export's workspace is on this shard: missing is missing.
	w.remote = nil
	b = newBinding("b", "root:provider", "widgets")
	if _, err := w.reconciler().reconcile(context.Background(), consumer, b); err != nil {
		t.Fatal(err)
	}
	if c := condition(t, b, apisv1alpha2.APIExportValid); c.Reason != apisv1alpha2.APIExportNotFoundReason {
		t.Errorf("APIExportValid = %+v, want %s", c, apisv1alpha2.APIExportNotFoundReason)
	}
}

// Two bindings of different exports reconciled one after the other, before
// the informer shows the first one's status, must not both bind.
func TestReconcileRecentClaimBlocksSecondBinding(t *testing.T) {
	w := happyWorld()
	w.exports["elsewhere|widgets"] = widgetExport("other-identity")
	w.schemas["elsewhere|v1.widgets.example.io"] = w.schemas["provider|v1.widgets.example.io"]
	first, second := newBinding("first", "root:provider", "widgets"), newBinding("second", "elsewhere", "widgets")
	w.bindings = []*apisv1alpha2.APIBinding{first.DeepCopy(), second.DeepCopy()} // informer: no status yet
	r := w.reconciler()
	if _, err := r.reconcile(context.Background(), consumer, first); err != nil {
		t.Fatal(err)
	}
	if first.Status.Phase != apisv1alpha2.APIBindingPhaseBound {
		t.Fatalf("first: phase %q", first.Status.Phase)
	}
	if _, err := r.reconcile(context.Background(), consumer, second); err != nil {
		t.Fatal(err)
	}
	if c := condition(t, second, apisv1alpha2.BindingUpToDate); c.Reason != apisv1alpha2.NamingConflictsReason || !strings.Contains(c.Message, "APIBinding first") {
		t.Errorf("second: BindingUpToDate = %+v", c)
	}
}
