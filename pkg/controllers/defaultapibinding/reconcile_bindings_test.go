package defaultapibinding

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/cache"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

const (
	ws logicalcluster.Name = "2x8j4k1m9q0w3e5r"
	// orgCluster holds the types; root:org is its path.
	orgCluster logicalcluster.Name = "orgclusterxxxxxx"
)

func workspaceType(cluster logicalcluster.Name, name string, spec tenancyv1alpha1.WorkspaceTypeSpec) *tenancyv1alpha1.WorkspaceType {
	return &tenancyv1alpha1.WorkspaceType{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{logicalcluster.AnnotationKey: string(cluster)}},
		Spec:       spec,
	}
}

func export(name string, claims ...apisv1alpha2.PermissionClaim) *apisv1alpha2.APIExport {
	return &apisv1alpha2.APIExport{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: apisv1alpha2.APIExportSpec{PermissionClaims: claims}}
}

func binding(name, path, exportName string, phase apisv1alpha2.APIBindingPhaseType) *apisv1alpha2.APIBinding {
	return &apisv1alpha2.APIBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       apisv1alpha2.APIBindingSpec{Reference: apisv1alpha2.BindingReference{Export: &apisv1alpha2.ExportBindingReference{Path: path, Name: exportName}}},
		Status:     apisv1alpha2.APIBindingStatus{Phase: phase},
	}
}

func initializing(typeAnnotation string, initializers ...corev1alpha1.LogicalClusterInitializer) *corev1alpha1.LogicalCluster {
	return &corev1alpha1.LogicalCluster{
		ObjectMeta: metav1.ObjectMeta{Name: corev1alpha1.LogicalClusterName, Annotations: map[string]string{
			logicalcluster.AnnotationKey:                 string(ws),
			corev1alpha1.LogicalClusterTypeAnnotationKey: typeAnnotation,
		}},
		Status: corev1alpha1.LogicalClusterStatus{Phase: corev1alpha1.LogicalClusterPhaseInitializing, Initializers: initializers},
	}
}

// world is what the reconciler sees: types by "<path>:<name>", exports by
// "<path>:<name>", the bindings of ws, and what it created.
type world struct {
	types     map[string]*tenancyv1alpha1.WorkspaceType
	exports   map[string]*apisv1alpha2.APIExport
	bindings  []*apisv1alpha2.APIBinding
	createErr error
	created   []*apisv1alpha2.APIBinding
}

func (w *world) reconciler() *bindingsReconciler {
	return &bindingsReconciler{
		// The chain: a type's extend.with, resolved in the test's map.
		resolveTypes: func(ref tenancyv1alpha1.WorkspaceTypeReference) ([]*tenancyv1alpha1.WorkspaceType, []tenancyv1alpha1.WorkspaceTypeReference, error) {
			var types []*tenancyv1alpha1.WorkspaceType
			var refs []tenancyv1alpha1.WorkspaceTypeReference
			for next := []tenancyv1alpha1.WorkspaceTypeReference{ref}; len(next) > 0; next = next[1:] {
				wt, ok := w.types[next[0].String()]
				if !ok {
					return nil, nil, fmt.Errorf("workspace type %s does not exist", next[0].String())
				}
				types, refs = append(types, wt), append(refs, next[0])
				next = append(next, wt.Spec.Extend.With...)
			}
			return types, refs, nil
		},
		getAPIExport: func(cluster logicalcluster.Name, path logicalcluster.Path, name string) *apisv1alpha2.APIExport {
			if cluster != ws {
				panic("exports are looked up from another cluster than the workspace's: " + cluster)
			}
			return w.exports[path.Join(name).String()]
		},
		listAPIBindings: func(cluster logicalcluster.Name) []*apisv1alpha2.APIBinding {
			if cluster != ws {
				return nil
			}
			return w.bindings
		},
		createAPIBinding: func(_ context.Context, cluster logicalcluster.Name, b *apisv1alpha2.APIBinding) error {
			if cluster != ws {
				return fmt.Errorf("binding created in %s, not in the workspace", cluster)
			}
			if w.createErr != nil {
				return w.createErr
			}
			w.created = append(w.created, b)
			return nil
		},
	}
}

func condition(lc *corev1alpha1.LogicalCluster) *conditionsv1alpha1.Condition {
	return lc.Status.Conditions.Get(tenancyv1alpha1.WorkspaceAPIBindingsInitialized)
}

func requeuesLater(err error) bool {
	var after loop.RequeueAfter
	return errors.As(err, &after) && time.Duration(after) > 0
}

// chain is root:org:leaf extending root:org:base, which lists the export
// widgets of root:org:provider and gadgets of its own workspace; leaf
// lists widgets again.
func chain() map[string]*tenancyv1alpha1.WorkspaceType {
	widgets := tenancyv1alpha1.APIExportReference{Path: "root:org:provider", Export: "widgets"}
	return map[string]*tenancyv1alpha1.WorkspaceType{
		"root:org:leaf": workspaceType(orgCluster, "leaf", tenancyv1alpha1.WorkspaceTypeSpec{
			Extend:             tenancyv1alpha1.WorkspaceTypeExtension{With: []tenancyv1alpha1.WorkspaceTypeReference{{Name: "base", Path: "root:org"}}},
			DefaultAPIBindings: []tenancyv1alpha1.APIExportReference{widgets},
		}),
		"root:org:base": workspaceType(orgCluster, "base", tenancyv1alpha1.WorkspaceTypeSpec{
			DefaultAPIBindings: []tenancyv1alpha1.APIExportReference{widgets, {Export: "gadgets"}},
		}),
	}
}

func TestDefaultBindingsAreCreatedOncePerExportOfTheTypeChain(t *testing.T) {
	labelSelector := apisv1alpha2.PermissionClaimSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"shared": "true"}}}
	configmaps := apisv1alpha2.PermissionClaim{GroupResource: apisv1alpha2.GroupResource{Resource: "configmaps"}, Verbs: []string{"get"}}
	secrets := apisv1alpha2.PermissionClaim{GroupResource: apisv1alpha2.GroupResource{Resource: "secrets"}, Verbs: []string{"*"}, DefaultSelector: &labelSelector}
	w := &world{
		types: chain(),
		exports: map[string]*apisv1alpha2.APIExport{
			"root:org:provider:widgets": export("widgets", configmaps, secrets),
			// Without a path, the export is in the type's workspace, which
			// kcp spells as its logical cluster name.
			string(orgCluster) + ":gadgets": export("gadgets"),
		},
	}
	lc := initializing("root:org:leaf", "root:org:leaf", tenancyv1alpha1.WorkspaceAPIBindingsInitializer)
	if err := w.reconciler().reconcile(context.Background(), ws, lc); err != nil {
		t.Fatalf("reconcile: %v", err)
	}

	if len(w.created) != 2 {
		t.Fatalf("created %d bindings, want one per distinct export (2): %+v", len(w.created), w.created)
	}
	widgets, gadgets := w.created[0], w.created[1]
	if widgets.Name != BindingName(ws, "root:org:provider", "widgets") ||
		*widgets.Spec.Reference.Export != (apisv1alpha2.ExportBindingReference{Path: "root:org:provider", Name: "widgets"}) {
		t.Errorf("widgets binding %s refers to %+v", widgets.Name, widgets.Spec.Reference.Export)
	}
	if *gadgets.Spec.Reference.Export != (apisv1alpha2.ExportBindingReference{Path: string(orgCluster), Name: "gadgets"}) || len(gadgets.Spec.PermissionClaims) != 0 {
		t.Errorf("gadgets binding %s: reference %+v claims %+v", gadgets.Name, gadgets.Spec.Reference.Export, gadgets.Spec.PermissionClaims)
	}
	// Every claim of the export is accepted, with its default selector.
	wantClaims := []apisv1alpha2.AcceptablePermissionClaim{
		{ScopedPermissionClaim: apisv1alpha2.ScopedPermissionClaim{PermissionClaim: configmaps, Selector: apisv1alpha2.PermissionClaimSelector{MatchAll: true}}, State: apisv1alpha2.ClaimAccepted},
		{ScopedPermissionClaim: apisv1alpha2.ScopedPermissionClaim{PermissionClaim: secrets, Selector: labelSelector}, State: apisv1alpha2.ClaimAccepted},
	}
	if fmt.Sprint(widgets.Spec.PermissionClaims) != fmt.Sprint(wantClaims) {
		t.Errorf("widgets claims = %+v, want %+v", widgets.Spec.PermissionClaims, wantClaims)
	}

	// Not bound yet: the initializer stays; bindings on their way are not
	// worth a condition.
	if !slices.Contains(lc.Status.Initializers, tenancyv1alpha1.WorkspaceAPIBindingsInitializer) {
		t.Errorf("initializers %v lost system:apibindings before the bindings are bound", lc.Status.Initializers)
	}
	if c := condition(lc); c != nil {
		t.Errorf("condition = %+v after creating the bindings, want none yet", c)
	}
}

func TestInitializerIsRemovedOnlyWhenEveryDefaultBindingIsBound(t *testing.T) {
	widgetsName := BindingName(ws, "root:org:provider", "widgets")
	gadgetsName := BindingName(ws, logicalcluster.Path(orgCluster), "gadgets")
	notBound := binding(gadgetsName, string(orgCluster), "gadgets", apisv1alpha2.APIBindingPhaseBinding)
	notBound.Status.Conditions = conditionsv1alpha1.Conditions{{Type: apisv1alpha2.APIExportValid, Status: corev1.ConditionFalse, Reason: "APIResourceSchemaInvalid", Message: "APIResourceSchema v1.gadgets does not exist"}}
	tests := []struct {
		name     string
		bindings []*apisv1alpha2.APIBinding
		// recorded: the condition says the workspace waits already.
		recorded    bool
		wantRemoved bool
		// wantMessage are in the WaitingOnAPIBindings message; none: no
		// condition is set.
		wantMessage []string
	}{
		{
			name:        "one is still binding: its name and why",
			bindings:    []*apisv1alpha2.APIBinding{binding(widgetsName, "root:org:provider", "widgets", apisv1alpha2.APIBindingPhaseBound), notBound},
			wantMessage: []string{gadgetsName, "APIResourceSchema v1.gadgets does not exist"},
		},
		{
			name: "all bound",
			bindings: []*apisv1alpha2.APIBinding{
				binding(widgetsName, "root:org:provider", "widgets", apisv1alpha2.APIBindingPhaseBound),
				binding(gadgetsName, string(orgCluster), "gadgets", apisv1alpha2.APIBindingPhaseBound),
			},
			wantRemoved: true,
		},
		{
			name: "a binding of another name to the same export counts",
			bindings: []*apisv1alpha2.APIBinding{
				binding("my-widgets", "root:org:provider", "widgets", apisv1alpha2.APIBindingPhaseBound),
				binding(gadgetsName, string(orgCluster), "gadgets", apisv1alpha2.APIBindingPhaseBound),
			},
			wantRemoved: true,
		},
		{
			name: "a binding to the same export by another path does not",
			bindings: []*apisv1alpha2.APIBinding{
				binding("elsewhere", "root:other:provider", "widgets", apisv1alpha2.APIBindingPhaseBound),
				binding(gadgetsName, string(orgCluster), "gadgets", apisv1alpha2.APIBindingPhaseBound),
			},
		},
		{
			name: "a recorded wait is kept current",
			bindings: []*apisv1alpha2.APIBinding{
				binding("elsewhere", "root:other:provider", "widgets", apisv1alpha2.APIBindingPhaseBound),
				binding(gadgetsName, string(orgCluster), "gadgets", apisv1alpha2.APIBindingPhaseBound),
			},
			recorded:    true,
			wantMessage: []string{widgetsName + " for APIExport root:org:provider:widgets"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := &world{
				types: chain(),
				exports: map[string]*apisv1alpha2.APIExport{
					"root:org:provider:widgets":     export("widgets"),
					string(orgCluster) + ":gadgets": export("gadgets"),
				},
				bindings: tc.bindings,
			}
			lc := initializing("root:org:leaf", "root:org:leaf", tenancyv1alpha1.WorkspaceAPIBindingsInitializer)
			if tc.recorded {
				markFalse(lc, tenancyv1alpha1.WorkspaceInitializedWaitingOnAPIBindings, conditionsv1alpha1.ConditionSeverityInfo, "APIBinding(s) not yet fully bound: earlier")
			}
			if err := w.reconciler().reconcile(context.Background(), ws, lc); err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			// Only the missing binding of the last case is created.
			for _, b := range w.created {
				if b.Name != widgetsName {
					t.Errorf("created %s, but a binding of that export exists", b.Name)
				}
			}
			removed := !slices.Contains(lc.Status.Initializers, tenancyv1alpha1.WorkspaceAPIBindingsInitializer)
			if removed != tc.wantRemoved {
				t.Errorf("system:apibindings removed = %v, want %v (initializers %v)", removed, tc.wantRemoved, lc.Status.Initializers)
			}
			if !slices.Contains(lc.Status.Initializers, "root:org:leaf") {
				t.Errorf("the type's own initializer was removed: %v", lc.Status.Initializers)
			}
			c := condition(lc)
			if tc.wantRemoved {
				if c == nil || c.Status != corev1.ConditionTrue {
					t.Errorf("condition = %+v, want True", c)
				}
				return
			}
			if len(tc.wantMessage) == 0 {
				if c != nil {
					t.Errorf("condition = %+v, want none while the bindings are on their way", c)
				}
				return
			}
			if c == nil || c.Status != corev1.ConditionFalse || c.Reason != tenancyv1alpha1.WorkspaceInitializedWaitingOnAPIBindings {
				t.Fatalf("condition = %+v, want WaitingOnAPIBindings", c)
			}
			for _, s := range tc.wantMessage {
				if !strings.Contains(c.Message, s) {
					t.Errorf("message %q does not mention %q", c.Message, s)
				}
			}
		})
	}
}

func TestMissingExportHoldsTheWorkspaceAndSaysWhichExport(t *testing.T) {
	w := &world{
		types: chain(),
		// gadgets exists, widgets does not.
		exports: map[string]*apisv1alpha2.APIExport{string(orgCluster) + ":gadgets": export("gadgets")},
	}
	lc := initializing("root:org:leaf", tenancyv1alpha1.WorkspaceAPIBindingsInitializer)
	err := w.reconciler().reconcile(context.Background(), ws, lc)
	if !requeuesLater(err) {
		t.Errorf("reconcile returned %v, want a later look (not a failure that backs off)", err)
	}
	if len(w.created) != 1 || w.created[0].Spec.Reference.Export.Name != "gadgets" {
		t.Errorf("created %+v, want the binding of the export that exists", w.created)
	}
	if !slices.Contains(lc.Status.Initializers, tenancyv1alpha1.WorkspaceAPIBindingsInitializer) {
		t.Errorf("system:apibindings removed although an export is missing")
	}
	c := condition(lc)
	if c == nil || c.Status != corev1.ConditionFalse || c.Reason != tenancyv1alpha1.WorkspaceInitializedAPIBindingErrors || c.Severity != conditionsv1alpha1.ConditionSeverityError {
		t.Fatalf("condition = %+v, want APIBindingErrors", c)
	}
	for _, s := range []string{"APIExport root:org:provider:widgets", "WorkspaceType root:org:leaf", "does not exist"} {
		if !strings.Contains(c.Message, s) {
			t.Errorf("message %q does not mention %q", c.Message, s)
		}
	}
}

func TestUnresolvableTypeAndFailedCreationAreReported(t *testing.T) {
	t.Run("type missing from the chain", func(t *testing.T) {
		types := chain()
		delete(types, "root:org:base")
		w := &world{types: types}
		lc := initializing("root:org:leaf", tenancyv1alpha1.WorkspaceAPIBindingsInitializer)
		if err := w.reconciler().reconcile(context.Background(), ws, lc); !requeuesLater(err) {
			t.Errorf("reconcile returned %v, want a later look", err)
		}
		if c := condition(lc); c == nil || c.Reason != tenancyv1alpha1.WorkspaceInitializedWorkspaceTypeInvalid || !strings.Contains(c.Message, "root:org:base") {
			t.Errorf("condition = %+v, want WorkspaceTypesInvalid naming root:org:base", c)
		}
	})
	t.Run("no type annotation", func(t *testing.T) {
		w := &world{types: chain()}
		lc := initializing("", tenancyv1alpha1.WorkspaceAPIBindingsInitializer)
		if err := w.reconciler().reconcile(context.Background(), ws, lc); err != nil {
			t.Errorf("reconcile returned %v; nothing changes without a new annotation", err)
		}
		if c := condition(lc); c == nil || c.Reason != tenancyv1alpha1.WorkspaceInitializedWorkspaceTypeInvalid {
			t.Errorf("condition = %+v, want WorkspaceTypesInvalid", c)
		}
	})
	t.Run("creation fails", func(t *testing.T) {
		w := &world{
			types:     chain(),
			exports:   map[string]*apisv1alpha2.APIExport{"root:org:provider:widgets": export("widgets"), string(orgCluster) + ":gadgets": export("gadgets")},
			createErr: apierrors.NewForbidden(apisv1alpha2.Resource("apibindings"), "x", errors.New("no")),
		}
		lc := initializing("root:org:leaf", tenancyv1alpha1.WorkspaceAPIBindingsInitializer)
		err := w.reconciler().reconcile(context.Background(), ws, lc)
		if err == nil || requeuesLater(err) {
			t.Errorf("reconcile returned %v, want a failure to retry", err)
		}
		if c := condition(lc); c == nil || c.Reason != tenancyv1alpha1.WorkspaceInitializedAPIBindingErrors || !strings.Contains(c.Message, "forbidden") {
			t.Errorf("condition = %+v, want APIBindingErrors with the error", c)
		}
	})
	t.Run("name taken by a binding to another export", func(t *testing.T) {
		w := &world{
			types:   chain(),
			exports: map[string]*apisv1alpha2.APIExport{"root:org:provider:widgets": export("widgets"), string(orgCluster) + ":gadgets": export("gadgets")},
			bindings: []*apisv1alpha2.APIBinding{
				binding(BindingName(ws, "root:org:provider", "widgets"), "root:somewhere", "else", apisv1alpha2.APIBindingPhaseBound),
			},
		}
		lc := initializing("root:org:leaf", tenancyv1alpha1.WorkspaceAPIBindingsInitializer)
		if err := w.reconciler().reconcile(context.Background(), ws, lc); !requeuesLater(err) {
			t.Errorf("reconcile returned %v, want a later look", err)
		}
		if c := condition(lc); c == nil || c.Reason != tenancyv1alpha1.WorkspaceInitializedAPIBindingErrors || !strings.Contains(c.Message, "taken") {
			t.Errorf("condition = %+v, want APIBindingErrors saying the name is taken", c)
		}
		if !slices.Contains(lc.Status.Initializers, tenancyv1alpha1.WorkspaceAPIBindingsInitializer) {
			t.Errorf("system:apibindings removed although a binding is missing")
		}
	})
}

func TestBindingNameIsKCPs(t *testing.T) {
	// Computed independently: base 62 (0-9a-zA-Z) of the SHA-224 of
	// "<cluster>|<path>|<export>", first five characters, lower-cased.
	tests := []struct {
		cluster logicalcluster.Name
		path    logicalcluster.Path
		export  string
		want    string
	}{
		{"2x8j4k1m9q0w3e5r", "root", "tenancy.kcp.io", "tenancy.kcp.io-57kgf"},
		{"2x8j4k1m9q0w3e5r", "root:org:provider", "widgets", "widgets-b7eml"},
	}
	for _, tc := range tests {
		if got := BindingName(tc.cluster, tc.path, tc.export); got != tc.want {
			t.Errorf("BindingName(%s, %s, %s) = %s, want %s", tc.cluster, tc.path, tc.export, got, tc.want)
		}
	}
	long := BindingName(ws, "root", strings.Repeat("a", 260))
	if len(long) != validation.DNS1123SubdomainMaxLength || !strings.HasPrefix(long, strings.Repeat("a", 247)+"-") {
		t.Errorf("name of a long export is %d characters: %s", len(long), long)
	}
}

func TestOnlyNewClustersWaitingForTheInitializerArePending(t *testing.T) {
	now := metav1.Now()
	tests := []struct {
		name string
		lc   *corev1alpha1.LogicalCluster
		want bool
	}{
		{"initializing with system:apibindings", initializing("root:org:leaf", "root:org:leaf", tenancyv1alpha1.WorkspaceAPIBindingsInitializer), true},
		{"initializing without it: a type without default bindings", initializing("root:universal", "root:universal"), false},
		{"still scheduling: its content is bootstrapped meanwhile", func() *corev1alpha1.LogicalCluster {
			lc := initializing("root:org:leaf", tenancyv1alpha1.WorkspaceAPIBindingsInitializer)
			lc.Status.Phase = corev1alpha1.LogicalClusterPhaseScheduling
			return lc
		}(), true},
		{"ready", func() *corev1alpha1.LogicalCluster {
			lc := initializing("root:org:leaf", tenancyv1alpha1.WorkspaceAPIBindingsInitializer)
			lc.Status.Phase = corev1alpha1.LogicalClusterPhaseReady
			return lc
		}(), false},
		{"being deleted", func() *corev1alpha1.LogicalCluster {
			lc := initializing("root:org:leaf", tenancyv1alpha1.WorkspaceAPIBindingsInitializer)
			lc.DeletionTimestamp = &now
			return lc
		}(), false},
	}
	for _, tc := range tests {
		if got := pending(tc.lc); got != tc.want {
			t.Errorf("%s: pending = %v, want %v", tc.name, got, tc.want)
		}
		keys, _ := pendingIndex(tc.lc)
		if (len(keys) == 1) != tc.want {
			t.Errorf("%s: index keys %v", tc.name, keys)
		}
	}
}

// TestBindingsOnTheirWayCostNoStatusWrite: creating the bindings, and
// seeing them before the binding controller has written their status,
// leave the LogicalCluster's status as it was; a binding that reports what
// keeps it from binding is recorded.
func TestBindingsOnTheirWayCostNoStatusWrite(t *testing.T) {
	w := &world{
		types: chain(),
		exports: map[string]*apisv1alpha2.APIExport{
			"root:org:provider:widgets":     export("widgets"),
			string(orgCluster) + ":gadgets": export("gadgets"),
		},
	}
	lc := initializing("root:org:leaf", tenancyv1alpha1.WorkspaceAPIBindingsInitializer)
	before := lc.Status.DeepCopy()
	if err := w.reconciler().reconcile(context.Background(), ws, lc); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if len(w.created) != 2 {
		t.Fatalf("created %d bindings, want 2", len(w.created))
	}
	if !apiequality.Semantic.DeepEqual(*before, lc.Status) {
		t.Errorf("creating the bindings changed the status: %+v", lc.Status)
	}
	w.bindings, w.created = w.created, nil
	if err := w.reconciler().reconcile(context.Background(), ws, lc); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if len(w.created) != 0 || !apiequality.Semantic.DeepEqual(*before, lc.Status) {
		t.Errorf("seeing the new bindings created %d more and changed the status: %+v", len(w.created), lc.Status)
	}

	w.bindings[0].Status.Conditions = conditionsv1alpha1.Conditions{{Type: apisv1alpha2.APIExportValid, Status: corev1.ConditionFalse, Message: "schema missing"}}
	if err := w.reconciler().reconcile(context.Background(), ws, lc); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if c := condition(lc); c == nil || c.Reason != tenancyv1alpha1.WorkspaceInitializedWaitingOnAPIBindings || !strings.Contains(c.Message, "schema missing") {
		t.Errorf("condition = %+v, want WaitingOnAPIBindings with the binding's reason", c)
	}
}

// TestStatusIsWrittenOnceInitializingAndTheLastInitializerMakesItReady:
// while the LogicalCluster is Scheduling (its content is bootstrapped) the
// bindings are created but its status is not written; once Initializing,
// removing the last initializer makes it Ready in the same write, and with
// another initializer left it stays Initializing.
func TestStatusIsWrittenOnceInitializingAndTheLastInitializerMakesItReady(t *testing.T) {
	widgetsName := BindingName(ws, "root:org:provider", "widgets")
	gadgetsName := BindingName(ws, logicalcluster.Path(orgCluster), "gadgets")
	for _, tc := range []struct {
		name         string
		phase        corev1alpha1.LogicalClusterPhaseType
		initializers []corev1alpha1.LogicalClusterInitializer
		wantWrite    bool
		wantPhase    corev1alpha1.LogicalClusterPhaseType
	}{
		{"scheduling", corev1alpha1.LogicalClusterPhaseScheduling, []corev1alpha1.LogicalClusterInitializer{tenancyv1alpha1.WorkspaceAPIBindingsInitializer}, false, ""},
		{"initializing, the last initializer", corev1alpha1.LogicalClusterPhaseInitializing, []corev1alpha1.LogicalClusterInitializer{tenancyv1alpha1.WorkspaceAPIBindingsInitializer}, true, corev1alpha1.LogicalClusterPhaseReady},
		{"initializing, another initializer left", corev1alpha1.LogicalClusterPhaseInitializing, []corev1alpha1.LogicalClusterInitializer{"root:org:leaf", tenancyv1alpha1.WorkspaceAPIBindingsInitializer}, true, corev1alpha1.LogicalClusterPhaseInitializing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &world{
				types: chain(),
				exports: map[string]*apisv1alpha2.APIExport{
					"root:org:provider:widgets":     export("widgets"),
					string(orgCluster) + ":gadgets": export("gadgets"),
				},
				bindings: []*apisv1alpha2.APIBinding{
					binding(widgetsName, "root:org:provider", "widgets", apisv1alpha2.APIBindingPhaseBound),
					binding(gadgetsName, string(orgCluster), "gadgets", apisv1alpha2.APIBindingPhaseBound),
				},
			}
			lc := initializing("root:org:leaf", tc.initializers...)
			lc.Status.Phase = tc.phase
			lcs := wildcardinformer.New(&cache.ListWatch{}, &corev1alpha1.LogicalCluster{}, "test-logicalclusters")
			if err := lcs.Indexer().Add(lc); err != nil {
				t.Fatal(err)
			}
			var written []*corev1alpha1.LogicalCluster
			c := &Controller{
				logicalClusters: lcs,
				bindings:        w.reconciler(),
				updateStatus: func(_ context.Context, _ logicalcluster.Name, lc *corev1alpha1.LogicalCluster) error {
					written = append(written, lc.DeepCopy())
					return nil
				},
			}
			if err := c.reconcile(context.Background(), wildcardinformer.Key(ws, "", corev1alpha1.LogicalClusterName)); err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			if !tc.wantWrite {
				if len(written) > 0 {
					t.Errorf("wrote the status of a Scheduling LogicalCluster: %+v", written[0].Status)
				}
				return
			}
			if len(written) != 1 {
				t.Fatalf("%d status writes, want 1", len(written))
			}
			got := written[0].Status
			if got.Phase != tc.wantPhase || slices.Contains(got.Initializers, tenancyv1alpha1.WorkspaceAPIBindingsInitializer) {
				t.Errorf("wrote phase %s initializers %v, want phase %s without system:apibindings", got.Phase, got.Initializers, tc.wantPhase)
			}
		})
	}
}

// TestBindingsOfAClusterStillSchedulingAreCreatedInProcess: while the
// cluster is Scheduling its bindings are created in-process; once it is
// Initializing (an initializer may have set up admission in it), through
// the API.
func TestBindingsOfAClusterStillSchedulingAreCreatedInProcess(t *testing.T) {
	for _, phase := range []corev1alpha1.LogicalClusterPhaseType{corev1alpha1.LogicalClusterPhaseScheduling, corev1alpha1.LogicalClusterPhaseInitializing} {
		w := &world{
			types:   chain(),
			exports: map[string]*apisv1alpha2.APIExport{"root:org:provider:widgets": export("widgets"), string(orgCluster) + ":gadgets": export("gadgets")},
		}
		var inProcess []string
		r := w.reconciler()
		r.createInNewCluster = func(_ context.Context, cluster logicalcluster.Name, b *apisv1alpha2.APIBinding) error {
			inProcess = append(inProcess, string(cluster)+"|"+b.Name)
			return nil
		}
		lc := initializing("root:org:leaf", "root:org:leaf", tenancyv1alpha1.WorkspaceAPIBindingsInitializer)
		lc.Status.Phase = phase
		if err := r.reconcile(context.Background(), ws, lc); err != nil {
			t.Fatalf("%s: reconcile: %v", phase, err)
		}
		wantInProcess, wantAPI := 2, 0
		if phase != corev1alpha1.LogicalClusterPhaseScheduling {
			wantInProcess, wantAPI = 0, 2
		}
		if len(inProcess) != wantInProcess || len(w.created) != wantAPI {
			t.Errorf("%s: %d bindings created in-process, %d through the API; want %d and %d", phase, len(inProcess), len(w.created), wantInProcess, wantAPI)
		}
	}
}
