package apiexport

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/virtual/framework"
)

// serveDiscovery answers /api, /api/v1, /apis, /apis/<group> and
// /apis/<group>/<version> with what the view serves: the shard's discovery
// of a workspace where each resource is open, cut down to those resources.
// Discovery is always the legacy (unaggregated) JSON form; clients fall
// back to it.
func (v *View) serveDiscovery(w http.ResponseWriter, req *http.Request, r *request, view *exportView) {
	if req.Method != http.MethodGet {
		framework.Error(w, req, apierrors.NewMethodNotSupported(schema.GroupResource{}, req.Method))
		return
	}
	if !r.cluster.IsWildcard() && !view.hasCluster(r.cluster) {
		framework.NotFound(w, req, r.rest)
		return
	}
	open := view.resources(r.cluster)
	segments := strings.Split(strings.Trim(r.rest, "/"), "/")
	var out interface{}
	var err error
	switch {
	case len(segments) == 1 && segments[0] == "api":
		out, err = v.coreVersions(req, r, view, open)
	case len(segments) == 1 && segments[0] == "apis":
		out, err = v.groups(req, r, view, open)
	case len(segments) == 2 && segments[0] == "apis":
		out, err = v.group(req, r, view, open, segments[1])
	case len(segments) == 2 && segments[0] == "api":
		out, err = v.resourceList(req, r, view, open, schema.GroupVersion{Version: segments[1]})
	case len(segments) == 3 && segments[0] == "apis":
		out, err = v.resourceList(req, r, view, open, schema.GroupVersion{Group: segments[1], Version: segments[2]})
	default:
		framework.NotFound(w, req, r.rest)
		return
	}
	if err != nil {
		framework.Error(w, req, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache, private")
	_ = json.NewEncoder(w).Encode(out)
}

// groupsOf returns the groups of resources, the core group as "".
func groupsOf(grs []schema.GroupResource) map[string][]schema.GroupResource {
	out := map[string][]schema.GroupResource{}
	for _, gr := range grs {
		out[gr.Group] = append(out[gr.Group], gr)
	}
	return out
}

func (v *View) coreVersions(req *http.Request, r *request, view *exportView, open []schema.GroupResource) (interface{}, error) {
	out := &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{}}
	core := groupsOf(open)[""]
	if len(core) == 0 {
		return out, nil
	}
	cluster, _ := view.clusterFor(core[0], r.cluster)
	if err := v.get(req, cluster, "/api", out); err != nil {
		return nil, err
	}
	return out, nil
}

func (v *View) groups(req *http.Request, r *request, view *exportView, open []schema.GroupResource) (interface{}, error) {
	out := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{}}
	byGroup := groupsOf(open)
	names := make([]string, 0, len(byGroup))
	for g := range byGroup {
		if g != "" {
			names = append(names, g)
		}
	}
	sort.Strings(names)
	for _, g := range names {
		group, err := v.groupOf(req, r, view, byGroup[g], g)
		if err != nil {
			return nil, err
		}
		out.Groups = append(out.Groups, *group)
	}
	return out, nil
}

func (v *View) group(req *http.Request, r *request, view *exportView, open []schema.GroupResource, g string) (interface{}, error) {
	grs := groupsOf(open)[g]
	if g == "" || len(grs) == 0 {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: g}, "")
	}
	group, err := v.groupOf(req, r, view, grs, g)
	if err != nil {
		return nil, err
	}
	group.Kind, group.APIVersion = "APIGroup", "v1"
	return group, nil
}

// groupOf returns the discovery of group g in a workspace where its first
// open resource is.
func (v *View) groupOf(req *http.Request, r *request, view *exportView, grs []schema.GroupResource, g string) (*metav1.APIGroup, error) {
	cluster, _ := view.clusterFor(grs[0], r.cluster)
	group := &metav1.APIGroup{}
	if err := v.get(req, cluster, "/apis/"+g, group); err != nil {
		return nil, err
	}
	group.TypeMeta = metav1.TypeMeta{}
	return group, nil
}

// resourceList merges the resource lists of gv of the workspaces where
// its open resources are, keeping those resources and their subresources.
func (v *View) resourceList(req *http.Request, r *request, view *exportView, open []schema.GroupResource, gv schema.GroupVersion) (interface{}, error) {
	out := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String(), APIResources: []metav1.APIResource{}}
	grs := groupsOf(open)[gv.Group]
	if len(grs) == 0 {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: gv.Group}, gv.Version)
	}
	path := "/apis/" + gv.Group + "/" + gv.Version
	if gv.Group == "" {
		path = "/api/" + gv.Version
	}
	lists := map[logicalcluster.Name]*metav1.APIResourceList{}
	seen := map[string]bool{}
	found := false
	for _, gr := range grs {
		cluster, _ := view.clusterFor(gr, r.cluster)
		list, ok := lists[cluster]
		if !ok {
			list = &metav1.APIResourceList{}
			if err := v.get(req, cluster, path, list); err != nil {
				if apierrors.IsNotFound(err) {
					lists[cluster] = nil
					continue
				}
				return nil, err
			}
			lists[cluster] = list
		}
		if list == nil {
			continue
		}
		found = true
		for _, res := range list.APIResources {
			base, _, _ := strings.Cut(res.Name, "/")
			if base != gr.Resource || seen[res.Name] {
				continue
			}
			seen[res.Name] = true
			out.APIResources = append(out.APIResources, res)
		}
	}
	if !found {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: gv.Group}, gv.Version)
	}
	return out, nil
}

// get reads a discovery document of a workspace from the shard.
func (v *View) get(req *http.Request, cluster logicalcluster.Name, path string, into interface{}) error {
	return v.getPath(req, cluster.RequestPath()+path, into)
}

// getPath reads JSON at path (below /clusters/) from the shard.
func (v *View) getPath(req *http.Request, path string, into interface{}) error {
	base, err := shardURL(v.shard)
	if err != nil {
		return apierrors.NewServiceUnavailable(err.Error())
	}
	u := *base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	out, err := http.NewRequestWithContext(req.Context(), http.MethodGet, u.String(), nil)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	out.Header.Set("Accept", "application/json")
	resp, err := v.client.Do(out)
	if err != nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("the shard is not reachable: %v", err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("reading from the shard: %v", err))
	}
	if resp.StatusCode != http.StatusOK {
		return statusError(resp.StatusCode, body)
	}
	return json.Unmarshal(body, into)
}

// statusError turns a shard's error answer into an API error.
func statusError(code int, body []byte) error {
	status := &metav1.Status{}
	if err := json.Unmarshal(body, status); err == nil && status.Kind == "Status" {
		return &apierrors.StatusError{ErrStatus: *status}
	}
	return apierrors.NewGenericServerResponse(code, "", schema.GroupResource{}, "", strings.TrimSpace(string(body)), 0, false)
}

// shardURL is the shard's base URL.
func shardURL(c *rest.Config) (*url.URL, error) {
	host := c.Host
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	u, err := url.Parse(host)
	if err != nil {
		return nil, fmt.Errorf("shard URL %q: %w", c.Host, err)
	}
	return u, nil
}
