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
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
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
	return unstructured.Unstructured{Object: map[string]interface{}{
		"metadata": map[string]interface{}{"name": "instances." + name, "resourceVersion": "7"},
		"spec": map[string]interface{}{"raw": map[string]interface{}{
			"apiVersion": "machines.svm.io/v1alpha1", "kind": "Instance",
			"metadata": map[string]interface{}{"name": name, "annotations": map[string]interface{}{logicalcluster.AnnotationKey: string(provider)}},
		}}}}
}

const consumer = logicalcluster.Name("consumer")

func newTestView(t *testing.T, authz authorizer.Authorizer) (*View, *watch.FakeWatcher) {
	t.Helper()
	events := watch.NewFake()
	v, err := New(Config{
		EndpointSlice: func(_ context.Context, cluster logicalcluster.Name, name string) (*cachev1alpha1.ClusterCachedResourceEndpointSlice, error) {
			if cluster != provider || name != "instances-slice" {
				return nil, apierrors.NewNotFound(cachev1alpha1.Resource("clustercachedresourceendpointslices"), name)
			}
			return &cachev1alpha1.ClusterCachedResourceEndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: cachev1alpha1.ClusterCachedResourceEndpointSliceSpec{
				ClusterCachedResource: cachev1alpha1.ClusterCachedResourceReference{Name: "instances"},
				APIExport:             cachev1alpha1.ExportBindingReference{Name: "compute"},
			}}, nil
		},
		CachedResource: func(_ context.Context, cluster logicalcluster.Name, name string) (*cachev1alpha1.ClusterCachedResource, error) {
			if cluster != provider || name != "instances" {
				return nil, apierrors.NewNotFound(cachev1alpha1.Resource("clustercachedresources"), name)
			}
			return &cachev1alpha1.ClusterCachedResource{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: cachev1alpha1.ClusterCachedResourceSpec{GroupVersionResource: cachev1alpha1.GroupVersionResource{
				Group: "machines.svm.io", Version: "v1alpha1", Resource: "instances",
			}}}, nil
		},
		Copies: func(context.Context, logicalcluster.Name, string) (*unstructured.UnstructuredList, error) {
			list := &unstructured.UnstructuredList{Items: []unstructured.Unstructured{copyOf("b"), copyOf("a")}}
			list.SetResourceVersion("9")
			return list, nil
		},
		WatchCopies: func(context.Context, logicalcluster.Name, string, string) (watch.Interface, error) {
			return events, nil
		},
		APIBindings: func(cluster logicalcluster.Name) ([]*apisv1alpha2.APIBinding, error) {
			if cluster != consumer {
				return nil, nil
			}
			return []*apisv1alpha2.APIBinding{{
				Spec: apisv1alpha2.APIBindingSpec{Reference: apisv1alpha2.BindingReference{Export: &apisv1alpha2.ExportBindingReference{Name: "compute"}}},
				Status: apisv1alpha2.APIBindingStatus{APIExportClusterName: string(provider), BoundResources: []apisv1alpha2.BoundAPIResource{
					{Group: "machines.svm.io", Resource: "instances"},
				}},
			}}, nil
		},
		Authorizer: authz,
	})
	if err != nil {
		t.Fatal(err)
	}
	return v, events
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
	v, _ := newTestView(t, authz)
	base := Prefix + "provider/instances-slice/clusters/consumer/apis/machines.svm.io/v1alpha1/instances"

	w := serve(v, http.MethodGet, base)
	if w.Code != http.StatusOK {
		t.Fatalf("list: %d %s", w.Code, w.Body)
	}
	var list struct {
		Kind     string `json:"kind"`
		Metadata metav1.ListMeta
		Items    []metav1.PartialObjectMetadata
	}
	if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "InstanceList" || len(list.Items) != 2 || list.Items[0].Name != "a" || list.Metadata.ResourceVersion != "9" {
		t.Errorf("list %+v, want InstanceList of a and b at 9", list)
	}
	if got := list.Items[0].Annotations[logicalcluster.AnnotationKey]; got != string(consumer) {
		t.Errorf("item shown in cluster %q, want the consumer's", got)
	}
	if authz.cluster != provider || authz.attrs.GetResource() != "apiexports" || authz.attrs.GetSubresource() != "content" || authz.attrs.GetName() != "compute" || authz.attrs.GetVerb() != "list" {
		t.Errorf("asked %#v in %s, want list apiexports/content compute in the provider", authz.attrs, authz.cluster)
	}
	if w := serve(v, http.MethodGet, base+"/b"); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"name":"b"`) {
		t.Errorf("get: %d %s", w.Code, w.Body)
	}
	if w := serve(v, http.MethodGet, base+"/c"); w.Code != http.StatusNotFound {
		t.Errorf("get of a missing copy: %d, want 404", w.Code)
	}
	if w := serve(v, http.MethodGet, base+"?labelSelector=tier%3Dpremium"); w.Code != http.StatusOK || strings.Contains(w.Body.String(), `"name"`) {
		t.Errorf("list of a selector no copy matches: %d %s", w.Code, w.Body)
	}
	if w := serve(v, http.MethodDelete, base+"/b"); w.Code != http.StatusForbidden {
		t.Errorf("delete: %d, want 403", w.Code)
	}
	if w := serve(v, http.MethodGet, Prefix+"provider/instances-slice/apis/machines.svm.io/v1alpha1/others"); w.Code != http.StatusNotFound {
		t.Errorf("another resource: %d, want 404", w.Code)
	}
	if w := serve(v, http.MethodGet, Prefix+"provider/missing/apis/machines.svm.io/v1alpha1/instances"); w.Code != http.StatusNotFound {
		t.Errorf("a missing endpoint slice: %d, want 404", w.Code)
	}
	if w := serve(v, http.MethodGet, Prefix+"provider/instances-slice/clusters/unbound/apis/machines.svm.io/v1alpha1/instances"); w.Code != http.StatusForbidden {
		t.Errorf("list in a workspace without a binding of the export: %d, want 403", w.Code)
	}
}

func TestViewRefusesCallersWithoutContentAccessToTheExport(t *testing.T) {
	v, _ := newTestView(t, &allowIf{})
	w := serve(v, http.MethodGet, Prefix+"provider/instances-slice/apis/machines.svm.io/v1alpha1/instances")
	if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "apiexports/content compute") {
		t.Errorf("list without permission: %d %s, want 403 naming the permission", w.Code, w.Body)
	}
}

func TestViewWatchStreamsTheCopiedObjects(t *testing.T) {
	v, events := newTestView(t, &allowIf{allowed: true})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		v.ServeHTTP(w, req.WithContext(apirequest.WithUser(req.Context(), &user.DefaultInfo{Name: "alice"})))
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + Prefix + "provider/instances-slice/clusters/consumer/apis/machines.svm.io/v1alpha1/instances?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch: %d", resp.StatusCode)
	}
	a, b := copyOf("a"), copyOf("b")
	go func() {
		events.Add(&a)
		events.Modify(&b)
		events.Delete(&a)
	}()
	dec := json.NewDecoder(resp.Body)
	for _, want := range []struct{ typ, name string }{{"ADDED", "a"}, {"MODIFIED", "b"}, {"DELETED", "a"}} {
		var e struct {
			Type   string
			Object metav1.PartialObjectMetadata
		}
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("decode event: %v", err)
		}
		if e.Type != want.typ || e.Object.Name != want.name || e.Object.Annotations[logicalcluster.AnnotationKey] != string(consumer) {
			t.Errorf("event %s %s in %q, want %s %s in the consumer", e.Type, e.Object.Name, e.Object.Annotations[logicalcluster.AnnotationKey], want.typ, want.name)
		}
	}
}
