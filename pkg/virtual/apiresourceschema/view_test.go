package apiresourceschema

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

const consumer = logicalcluster.Name("consumer")

func binding(name string, phase apisv1alpha2.APIBindingPhaseType, exportCluster string, schemas ...string) *apisv1alpha2.APIBinding {
	b := &apisv1alpha2.APIBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       apisv1alpha2.APIBindingSpec{Reference: apisv1alpha2.BindingReference{Export: &apisv1alpha2.ExportBindingReference{Name: name}}},
		Status:     apisv1alpha2.APIBindingStatus{Phase: phase, APIExportClusterName: exportCluster},
	}
	for _, s := range schemas {
		b.Status.BoundResources = append(b.Status.BoundResources, apisv1alpha2.BoundAPIResource{Schema: apisv1alpha2.BoundAPIResourceSchema{Name: s}})
	}
	return b
}

// recorder allows what allowed says and records the question.
type recorder struct {
	allowed bool
	cluster logicalcluster.Name
	attrs   authorizer.Attributes
}

func (r *recorder) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	r.cluster, _ = logicalcluster.ClusterFromContext(ctx)
	r.attrs = a
	if r.allowed {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "no RBAC policy matched", nil
}

func (r *recorder) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(r.Authorize(ctx, a))
}

func (*recorder) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

func newTestView(t *testing.T, authz authorizer.Authorizer, bindings ...*apisv1alpha2.APIBinding) *View {
	t.Helper()
	stored := map[string]*apisv1alpha1.APIResourceSchema{}
	for _, key := range []string{"p1/s1.sheriffs.a.io", "p2/s2.sheriffs.b.io", "p3/s3.sheriffs.c.io"} {
		cluster, name, _ := strings.Cut(key, "/")
		stored[key] = &apisv1alpha1.APIResourceSchema{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{logicalcluster.AnnotationKey: cluster}}}
	}
	v, err := New(Config{
		Bindings: func(c logicalcluster.Name) ([]*apisv1alpha2.APIBinding, error) {
			if c != consumer {
				return nil, nil
			}
			return bindings, nil
		},
		Schema: func(_ context.Context, c logicalcluster.Name, name string) (*apisv1alpha1.APIResourceSchema, error) {
			if s, ok := stored[string(c)+"/"+name]; ok {
				return s, nil
			}
			return nil, apierrors.NewNotFound(Resource.GroupResource(), name)
		},
		Authorizer: authz,
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func serve(v *View, method, path string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	req = req.WithContext(apirequest.WithUser(req.Context(), &user.DefaultInfo{Name: "alice"}))
	rec := httptest.NewRecorder()
	v.ServeHTTP(rec, req)
	return rec
}

const collection = "/apis/apis.kcp.io/v1alpha1/apiresourceschemas"

func TestListServesTheSchemasOfBoundBindingsOnly(t *testing.T) {
	v := newTestView(t, &recorder{allowed: true},
		binding("b1", apisv1alpha2.APIBindingPhaseBound, "p1", "s1.sheriffs.a.io"),
		binding("b2", apisv1alpha2.APIBindingPhaseBound, "p2", "s2.sheriffs.b.io", "gone.sheriffs.b.io"),
		binding("b3", apisv1alpha2.APIBindingPhaseBinding, "p3", "s3.sheriffs.c.io"),
	)
	for _, prefix := range []string{"", "/clusters/*", "/clusters/" + string(consumer)} {
		rec := serve(v, http.MethodGet, Prefix+string(consumer)+prefix+collection)
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", prefix, rec.Code, rec.Body)
		}
		list := &apisv1alpha1.APIResourceSchemaList{}
		if err := json.Unmarshal(rec.Body.Bytes(), list); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range list.Items {
			names = append(names, s.Name)
		}
		if strings.Join(names, ",") != "s1.sheriffs.a.io,s2.sheriffs.b.io" || list.Kind != "APIResourceSchemaList" {
			t.Errorf("%s: kind %q, names %v; want APIResourceSchemaList of s1 and s2", prefix, list.Kind, names)
		}
	}
}

func TestGetServesABoundSchemaAndNothingElse(t *testing.T) {
	v := newTestView(t, &recorder{allowed: true}, binding("b1", apisv1alpha2.APIBindingPhaseBound, "p1", "s1.sheriffs.a.io"))
	rec := serve(v, http.MethodGet, Prefix+string(consumer)+"/clusters/*"+collection+"/s1.sheriffs.a.io")
	got := &apisv1alpha1.APIResourceSchema{}
	if err := json.Unmarshal(rec.Body.Bytes(), got); rec.Code != http.StatusOK || err != nil || got.Name != "s1.sheriffs.a.io" || got.Kind != "APIResourceSchema" {
		t.Fatalf("get a bound schema: %d %s", rec.Code, rec.Body)
	}
	// Bound elsewhere, or not at all: not found.
	for _, name := range []string{"s2.sheriffs.b.io", "non-existent-schema"} {
		if rec := serve(v, http.MethodGet, Prefix+string(consumer)+collection+"/"+name); rec.Code != http.StatusNotFound {
			t.Errorf("get %s: %d, want 404", name, rec.Code)
		}
	}
}

func TestWritesAreForbiddenBeforeAnyReview(t *testing.T) {
	rec := &recorder{allowed: true}
	v := newTestView(t, rec, binding("b1", apisv1alpha2.APIBindingPhaseBound, "p1", "s1.sheriffs.a.io"))
	for _, tc := range []struct{ method, path string }{
		{http.MethodPost, collection},
		{http.MethodPut, collection + "/s1.sheriffs.a.io"},
		{http.MethodDelete, collection + "/s1.sheriffs.a.io"},
		{http.MethodPatch, collection + "/s1.sheriffs.a.io"},
	} {
		got := serve(v, tc.method, Prefix+string(consumer)+tc.path)
		if got.Code != http.StatusForbidden || !strings.Contains(got.Body.String(), "only read-only access is allowed to apiresourceschemas") {
			t.Errorf("%s %s: %d %s, want 403 read-only", tc.method, tc.path, got.Code, got.Body)
		}
	}
	if rec.attrs != nil {
		t.Errorf("a write was reviewed: %v", rec.attrs)
	}
}

func TestReadersNeedGetOnAPIBindingsInTheConsumer(t *testing.T) {
	rec := &recorder{}
	v := newTestView(t, rec, binding("b1", apisv1alpha2.APIBindingPhaseBound, "p1", "s1.sheriffs.a.io"))
	got := serve(v, http.MethodGet, Prefix+string(consumer)+collection)
	status := &metav1.Status{}
	_ = json.Unmarshal(got.Body.Bytes(), status)
	if got.Code != http.StatusForbidden || !strings.HasSuffix(status.Message, `: consumer cluster: "consumer" RBAC decision: no RBAC policy matched - user needs permission to read apibindings`) {
		t.Fatalf("denied list: %d %s", got.Code, got.Body)
	}
	a := rec.attrs
	if rec.cluster != consumer || a.GetVerb() != "get" || a.GetAPIGroup() != "apis.kcp.io" || a.GetResource() != "apibindings" || a.GetUser().GetName() != "alice" {
		t.Errorf("asked %v in %q, want alice's get apibindings in the consumer", a, rec.cluster)
	}
}

func TestDiscoveryShowsTheReadOnlyResource(t *testing.T) {
	v := newTestView(t, &recorder{allowed: true}, binding("b1", apisv1alpha2.APIBindingPhaseBound, "p1", "s1.sheriffs.a.io"))
	rec := serve(v, http.MethodGet, Prefix+string(consumer)+"/clusters/*/apis/apis.kcp.io/v1alpha1")
	list := &metav1.APIResourceList{}
	if err := json.Unmarshal(rec.Body.Bytes(), list); rec.Code != http.StatusOK || err != nil || len(list.APIResources) != 1 {
		t.Fatalf("resource list: %d %s", rec.Code, rec.Body)
	}
	if r := list.APIResources[0]; r.Name != "apiresourceschemas" || r.Namespaced || strings.Join(r.Verbs, ",") != "get,list,watch" {
		t.Errorf("resource %+v, want cluster-scoped apiresourceschemas with get, list, watch", r)
	}
	groups := &metav1.APIGroupList{}
	rec = serve(v, http.MethodGet, Prefix+string(consumer)+"/apis")
	if err := json.Unmarshal(rec.Body.Bytes(), groups); err != nil || len(groups.Groups) != 1 || groups.Groups[0].Name != "apis.kcp.io" {
		t.Errorf("groups: %d %s", rec.Code, rec.Body)
	}
}

func TestConsumersWithoutBoundSchemasAndBadURLsAreNotFound(t *testing.T) {
	v := newTestView(t, &recorder{allowed: true})
	for _, path := range []string{
		Prefix + string(consumer) + collection,
		Prefix + string(consumer) + "/apis",
		Prefix + "root:org" + collection,
		Prefix + "*" + collection,
		Prefix,
	} {
		if rec := serve(v, http.MethodGet, path); rec.Code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, rec.Code)
		}
	}
	v = newTestView(t, &recorder{allowed: true}, binding("b1", apisv1alpha2.APIBindingPhaseBound, "p1", "s1.sheriffs.a.io"))
	for _, path := range []string{"/apis/apis.kcp.io/v1alpha1/apiexports", "/api/v1/configmaps", "/apis/apis.kcp.io/v1alpha1/namespaces/x/apiresourceschemas"} {
		if rec := serve(v, http.MethodGet, Prefix+string(consumer)+path); rec.Code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, rec.Code)
		}
	}
}
