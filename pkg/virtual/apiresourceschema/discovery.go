package apiresourceschema

import (
	"encoding/json"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shardplane/shardplane/pkg/virtual/framework"
)

// groupVersion is the one version of the view's group.
var groupVersion = metav1.GroupVersionForDiscovery{GroupVersion: Resource.GroupVersion().String(), Version: Resource.Version}

// resourceList is what the view serves: apiresourceschemas, cluster-scoped
// and read-only.
func resourceList() *metav1.APIResourceList {
	return &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: Resource.GroupVersion().String(),
		APIResources: []metav1.APIResource{{
			Name: Resource.Resource, SingularName: "apiresourceschema", Kind: "APIResourceSchema",
			Namespaced: false, Verbs: metav1.Verbs{"get", "list", "watch"},
		}},
	}
}

func group() metav1.APIGroup {
	return metav1.APIGroup{Name: Resource.Group, Versions: []metav1.GroupVersionForDiscovery{groupVersion}, PreferredVersion: groupVersion}
}

// serveDiscovery answers /api, /apis, /apis/<group> and
// /apis/<group>/<version> with the view's one resource, in the legacy
// (unaggregated) JSON form, which clients fall back to.
func serveDiscovery(w http.ResponseWriter, req *http.Request, r *request) {
	var out runtime.Object
	switch strings.Trim(r.info.Path, "/") {
	case "api":
		out = &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{}}
	case "apis":
		out = &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{group()}}
	case "apis/" + Resource.Group:
		g := group()
		g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
		out = &g
	case "apis/" + Resource.Group + "/" + Resource.Version:
		out = resourceList()
	default:
		framework.NotFound(w, req, r.info.Path)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, private")
	_ = json.NewEncoder(w).Encode(out)
}
