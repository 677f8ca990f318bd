package replication

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"

	cachev1alpha1 "github.com/shardplane/shardplane/pkg/apis/cache/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

const provider = logicalcluster.Name("provider")

// allowIf allows what allowed says and records the question.
type allowIf struct {
	allowed bool
	cluster logicalcluster.Name
	attrs   authorizer.Attributes
}

func (a *allowIf) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	a.cluster, _ = logicalcluster.ClusterFromContext(ctx)
	a.attrs = attrs
	if a.allowed {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "no RBAC policy matched", nil
}

func (a *allowIf) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attrs))
}

func (*allowIf) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

func copyOf(name string) unstructured.Unstructured {
	return unstructured.Unstructured{Object: map[string]interface{}{"spec": map[string]interface{}{"raw": map[string]interface{}{
		"apiVersion": "machines.svm.io/v1alpha1", "kind": "Instance", "metadata": map[string]interface{}{"name": name},
	}}}}
}

func newTestView(t *testing.T, authz authorizer.Authorizer) *View {
	t.Helper()
	v, err := New(Config{
		CachedResource: func(_ context.Context, cluster logicalcluster.Name, name string) (*cachev1alpha1.ClusterCachedResource, error) {
			if cluster != provider || name != "instances" {
				return nil, apierrors.NewNotFound(cachev1alpha1.Resource("clustercachedresources"), name)
			}
			return &cachev1alpha1.ClusterCachedResource{Spec: cachev1alpha1.ClusterCachedResourceSpec{GroupVersionResource: cachev1alpha1.GroupVersionResource{
				Group: "machines.svm.io", Version: "v1alpha1", Resource: "instances",
			}}}, nil
		},
		Copies: func(context.Context, logicalcluster.Name, string) ([]unstructured.Unstructured, error) {
			return []unstructured.Unstructured{copyOf("b"), copyOf("a")}, nil
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
	w := httptest.NewRecorder()
	v.ServeHTTP(w, req)
	return w
}

func TestViewServesTheCopiesReadOnly(t *testing.T) {
	authz := &allowIf{allowed: true}
	v := newTestView(t, authz)
	base := Prefix + "provider/instances/clusters/any/apis/machines.svm.io/v1alpha1/instances"

	w := serve(v, http.MethodGet, base)
	if w.Code != http.StatusOK {
		t.Fatalf("list: %d %s", w.Code, w.Body)
	}
	var list struct {
		Kind  string `json:"kind"`
		Items []metav1.PartialObjectMetadata
	}
	if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "InstanceList" || len(list.Items) != 2 || list.Items[0].Name != "a" {
		t.Errorf("list %+v, want InstanceList of a and b", list)
	}
	if authz.cluster != provider || authz.attrs.GetResource() != "clustercachedresources" || authz.attrs.GetName() != "instances" || authz.attrs.GetVerb() != "get" {
		t.Errorf("asked %s in %s, want get clustercachedresources/instances in the provider", authz.attrs, authz.cluster)
	}
	if w := serve(v, http.MethodGet, base+"/b"); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"name":"b"`) {
		t.Errorf("get: %d %s", w.Code, w.Body)
	}
	if w := serve(v, http.MethodGet, base+"/c"); w.Code != http.StatusNotFound {
		t.Errorf("get of a missing copy: %d, want 404", w.Code)
	}
	if w := serve(v, http.MethodDelete, base+"/b"); w.Code != http.StatusForbidden {
		t.Errorf("delete: %d, want 403", w.Code)
	}
	if w := serve(v, http.MethodGet, Prefix+"provider/instances/apis/machines.svm.io/v1alpha1/others"); w.Code != http.StatusNotFound {
		t.Errorf("another resource: %d, want 404", w.Code)
	}
	if w := serve(v, http.MethodGet, Prefix+"provider/missing/apis/machines.svm.io/v1alpha1/instances"); w.Code != http.StatusNotFound {
		t.Errorf("a missing ClusterCachedResource: %d, want 404", w.Code)
	}
}

func TestViewRefusesCallersWhoMayNotGetTheCachedResource(t *testing.T) {
	v := newTestView(t, &allowIf{})
	w := serve(v, http.MethodGet, Prefix+"provider/instances/apis/machines.svm.io/v1alpha1/instances")
	if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "clustercachedresources/instances") {
		t.Errorf("list without permission: %d %s, want 403 naming the permission", w.Code, w.Body)
	}
}
