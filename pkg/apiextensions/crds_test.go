package apiextensions

import (
	"testing"

	restful "github.com/emicklei/go-restful/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// listBound is a BoundAPIs whose every cluster binds the same resources.
type listBound []BoundResource

func (l listBound) Get(_ logicalcluster.Name, group, resource string) (BoundResource, bool) {
	for _, br := range l {
		if br.CRD.Spec.Group == group && br.CRD.Spec.Names.Plural == resource {
			return br, true
		}
	}
	return BoundResource{}, false
}
func (l listBound) List(logicalcluster.Name) []BoundResource { return l }
func (l listBound) ForIdentity(string, string, string) (BoundResource, bool) {
	return BoundResource{}, false
}
func (l listBound) InUse(types.UID, string) bool { return false }
func (l listBound) ForGroupResource(group, resource string) []BoundResource {
	if br, ok := l.Get("", group, resource); ok {
		return []BoundResource{br}
	}
	return nil
}

func webService(root string, paths ...string) *restful.WebService {
	ws := new(restful.WebService).Path(root)
	for _, p := range paths {
		ws.Route(ws.GET(p).To(func(*restful.Request, *restful.Response) {}))
	}
	return ws
}

func TestNativeAPIsKnowTheResourcesOfEachGroup(t *testing.T) {
	n := nativeAPIsOf([]*restful.WebService{
		webService("/api/v1", "/", "/namespaces/{namespace}/configmaps", "/namespaces"),
		webService("/apis/tenancy.kcp.io/v1alpha1", "/", "/workspaces", "/workspaces/{name}/status", "/watch/workspacetypes"),
	})
	for _, tc := range []struct {
		group, resource string
		want            bool
	}{
		{"", "configmaps", true},
		{"", "namespaces", true},
		{"", "v1", false},
		{"tenancy.kcp.io", "workspaces", true},
		{"tenancy.kcp.io", "workspacetypes", true},
		{"tenancy.kcp.io", "workspaceauthenticationconfigurations", false},
		{"tenancy.kcp.io", "v1alpha1", false},
		{"example.io", "workspaces", false},
	} {
		if got := n.serves(tc.group, tc.resource); got != tc.want {
			t.Errorf("serves(%q, %q) = %v, want %v", tc.group, tc.resource, got, tc.want)
		}
	}
	if (*nativeAPIs)(nil).serves("", "configmaps") {
		t.Error("no native APIs known yet must serve nothing")
	}
}

func TestBoundResourcesTheShardServesItselfAreNotServedAsCustomResources(t *testing.T) {
	workspaces := testCRD("tenancy.kcp.io", "workspaces", []string{"v1alpha1"}, apiextensionsv1.Established)
	widgets := testCRD("example.io", "widgets", []string{"v1"}, apiextensionsv1.Established)
	native := nativeAPIsOf([]*restful.WebService{webService("/apis/tenancy.kcp.io/v1alpha1", "/workspaces")})
	i, err := newCRDIndex(wildcardinformer.New(&cache.ListWatch{}, &apiextensionsv1.CustomResourceDefinition{}, "test-customresourcedefinitions"))
	if err != nil {
		t.Fatal(err)
	}
	i.bound = listBound{{CRD: workspaces}, {CRD: widgets}}

	// Before the built-in APIs are installed nothing is known to be native.
	if got := i.boundServed("c"); len(got) != 2 {
		t.Fatalf("without native APIs: %d bound resources served, want 2", len(got))
	}
	i.native = func() *nativeAPIs { return native }
	got := i.boundServed("c")
	if len(got) != 1 || got[0].CRD != widgets {
		t.Fatalf("bound resources served as custom resources = %v, want only widgets", got)
	}
	if !i.hasAnyServed("c") {
		t.Error("a cluster with a bound widgets resource serves custom resources")
	}
	i.bound = listBound{{CRD: workspaces}}
	if i.hasAnyServed("c") {
		t.Error("a cluster whose only binding is of natively served workspaces has no custom resources")
	}
}
