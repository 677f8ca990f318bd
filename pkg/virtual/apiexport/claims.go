package apiexport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/virtual/framework"
)

// maxBody bounds the objects the view reads to check their labels, as the
// apiserver bounds request bodies.
const maxBody = 3 << 20

// serveClaimed serves a claimed resource: only in workspaces whose binding
// accepted the claim, only the objects that carry the claim's label (which
// admission sets on those the binding's selector selects), only with the
// accepted verbs. Across workspaces, a claim nobody accepted lists empty,
// as in kcp.
func (v *View) serveClaimed(w http.ResponseWriter, req *http.Request, r *request, c *claimedResource) {
	gr := schema.GroupResource{Group: r.info.APIGroup, Resource: r.info.Resource}
	verb := r.info.Verb
	if r.cluster.IsWildcard() {
		grants := map[logicalcluster.Name]claimGrant{}
		for cluster, g := range c.clusters {
			if g.allows(verb) {
				grants[cluster] = g
			}
		}
		v.filtered(w, req, logicalcluster.Wildcard.RequestPath()+withIdentity(r.rest, r.info, c.identityHash), grants, c.label, r)
		return
	}
	grant, ok := c.clusters[r.cluster]
	if !ok {
		v.notFound(w, req, r, gr)
		return
	}
	if !grant.allows(verb) {
		v.forbidden(w, req, r, gr, "the claim accepted in this workspace does not include this verb")
		return
	}
	path := r.cluster.RequestPath() + r.rest
	switch verb {
	case "list", "watch", "get":
		v.filtered(w, req, path, map[logicalcluster.Name]claimGrant{r.cluster: grant}, grant.label, r)
	case "create":
		body, ok := v.selectedBody(w, req, r, gr, grant)
		if !ok {
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		v.forward(w, req, path)
	case "update":
		body, ok := v.selectedBody(w, req, r, gr, grant)
		if !ok || !v.existingSelected(w, req, r, gr, grant.label) {
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		v.forward(w, req, path)
	case "patch", "delete":
		if v.existingSelected(w, req, r, gr, grant.label) {
			v.forward(w, req, path)
		}
	default:
		v.forbidden(w, req, r, gr, fmt.Sprintf("%s is not served for claimed resources", verb))
	}
}

// commonLabel returns the label all grants select by, so that the shard
// selects (fallback when none grants anything); when they differ (apibindings claimed in some workspaces,
// reflexive in others) the view alone selects.
func commonLabel(grants map[logicalcluster.Name]claimGrant, fallback labels.Selector) (labels.Selector, bool) {
	if len(grants) == 0 {
		return fallback, true
	}
	var label labels.Selector
	for _, g := range grants {
		if label == nil {
			label = g.label
		} else if label.String() != g.label.String() {
			return nil, false
		}
	}
	return label, true
}

func (v *View) forbidden(w http.ResponseWriter, req *http.Request, r *request, gr schema.GroupResource, why string) {
	framework.Error(w, req, apierrors.NewForbidden(gr, r.info.Name, errors.New(why)))
}

// selectedBody reads the object of a create or update and checks that the
// claim's selector selects it.
func (v *View) selectedBody(w http.ResponseWriter, req *http.Request, r *request, gr schema.GroupResource, grant claimGrant) ([]byte, bool) {
	body, err := io.ReadAll(io.LimitReader(req.Body, maxBody+1))
	if err != nil || len(body) > maxBody {
		framework.Error(w, req, apierrors.NewRequestEntityTooLargeError("the object is larger than 3 MiB"))
		return nil, false
	}
	objLabels, err := bodyLabels(req.Header.Get("Content-Type"), body)
	if err != nil {
		framework.Error(w, req, apierrors.NewBadRequest("the view takes JSON objects, or protobuf ones of Kubernetes' kinds, for claimed resources: "+err.Error()))
		return nil, false
	}
	if !grant.selector.Matches(labels.Set(objLabels)) {
		v.forbidden(w, req, r, gr, "the object's labels are not selected by the accepted claim")
		return nil, false
	}
	return body, true
}

// bodyLabels returns the labels of a request's object: JSON, or protobuf
// of Kubernetes' own kinds (what client-go sends for them).
func bodyLabels(contentType string, body []byte) (map[string]string, error) {
	if strings.Contains(contentType, "protobuf") {
		obj, _, err := clientgoscheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
		if err != nil {
			return nil, err
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		return m.GetLabels(), nil
	}
	var obj map[string]interface{}
	if err := json.Unmarshal(body, &obj); err != nil {
		return nil, err
	}
	return objectLabels(obj), nil
}

// existingSelected reads the object a request names and checks that it
// carries the claim's label; an object without it does not exist for the
// view.
func (v *View) existingSelected(w http.ResponseWriter, req *http.Request, r *request, gr schema.GroupResource, label labels.Selector) bool {
	path := r.cluster.RequestPath() + r.rest
	if r.info.Subresource != "" {
		path = strings.TrimSuffix(path, "/"+r.info.Subresource)
	}
	var obj map[string]interface{}
	if err := v.getPath(req, path, &obj); err != nil {
		framework.Error(w, req, err)
		return false
	}
	if !label.Matches(labels.Set(objectLabels(obj))) {
		v.notFound(w, req, r, gr)
		return false
	}
	return true
}

// filtered forwards a get, list or watch and passes on only the objects
// of the granted clusters that carry the claim's label; lists and watches
// ask the shard for those labels only.
func (v *View) filtered(w http.ResponseWriter, req *http.Request, path string, grants map[logicalcluster.Name]claimGrant, fallback labels.Selector, r *request) {
	selected := func(obj map[string]interface{}) bool {
		g, ok := grants[objectCluster(obj, r.cluster)]
		return ok && g.label.Matches(labels.Set(objectLabels(obj)))
	}
	query := req.URL.Query()
	if label, same := commonLabel(grants, fallback); r.info.Verb != "get" && same {
		sel := label.String()
		if user := query.Get("labelSelector"); user != "" {
			sel = user + "," + sel
		}
		query.Set("labelSelector", sel)
	}
	resp, err := v.send(req, path, query.Encode())
	if err != nil {
		framework.Error(w, req, err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound && r.cluster.IsWildcard() {
		// No workspace of the shard serves the claimed resource (none binds
		// its export): nothing is claimed here, as kcp answers, so that a
		// provider's informer on every endpoint of the slice syncs.
		emptyCollection(w, req, r)
		return
	}
	if resp.StatusCode != http.StatusOK {
		copyResponse(w, resp)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if r.info.Verb == "watch" {
		w.WriteHeader(http.StatusOK)
		flushWatch(w, resp.Body, selected)
		return
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		framework.Error(w, req, apierrors.NewServiceUnavailable(fmt.Sprintf("reading from the shard: %v", err)))
		return
	}
	var obj map[string]interface{}
	if err := json.Unmarshal(body, &obj); err != nil {
		framework.Error(w, req, apierrors.NewServiceUnavailable(fmt.Sprintf("the shard answered no JSON: %v", err)))
		return
	}
	if items, isList := obj["items"].([]interface{}); isList {
		kept := make([]interface{}, 0, len(items))
		for _, it := range items {
			if m, ok := it.(map[string]interface{}); ok && selected(m) {
				kept = append(kept, m)
			}
		}
		obj["items"] = kept
	} else if !selected(obj) {
		v.notFound(w, req, r, schema.GroupResource{Group: r.info.APIGroup, Resource: r.info.Resource})
		return
	}
	_ = json.NewEncoder(w).Encode(obj)
}

// emptyCollection answers a list with no items, or a watch that sends
// nothing until the caller leaves.
func emptyCollection(w http.ResponseWriter, req *http.Request, r *request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if r.info.Verb == "watch" {
		_ = http.NewResponseController(w).Flush()
		// As an apiserver's watch, it ends after timeoutSeconds if asked.
		var timeout <-chan time.Time
		if secs, err := strconv.Atoi(req.URL.Query().Get("timeoutSeconds")); err == nil && secs > 0 {
			timer := time.NewTimer(time.Duration(secs) * time.Second)
			defer timer.Stop()
			timeout = timer.C
		}
		select {
		case <-req.Context().Done():
		case <-timeout:
		}
		return
	}
	gv := schema.GroupVersion{Group: r.info.APIGroup, Version: r.info.APIVersion}
	_ = json.NewEncoder(w).Encode(map[string]interface{}{
		"apiVersion": gv.String(), "kind": "List", "metadata": map[string]interface{}{"resourceVersion": "0"}, "items": []interface{}{},
	})
}

// send issues the request on the shard at path with query, in JSON.
func (v *View) send(req *http.Request, path, query string) (*http.Response, error) {
	base, err := shardURL(v.shard)
	if err != nil {
		return nil, apierrors.NewServiceUnavailable(err.Error())
	}
	u := *base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawQuery = query
	out, err := http.NewRequestWithContext(req.Context(), req.Method, u.String(), nil)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	out.Header.Set("Accept", "application/json")
	resp, err := v.client.Do(out)
	if err != nil {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("the shard is not reachable: %v", err))
	}
	return resp, nil
}

// flushWatch copies watch events, dropping those of objects not selected;
// an object modified out of the selection is sent as deleted.
func flushWatch(w http.ResponseWriter, body io.Reader, selected func(map[string]interface{}) bool) {
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	dec := json.NewDecoder(body)
	enc := json.NewEncoder(w)
	for {
		var event struct {
			Type   string                 `json:"type"`
			Object map[string]interface{} `json:"object"`
		}
		if err := dec.Decode(&event); err != nil {
			return
		}
		switch event.Type {
		case "ADDED", "DELETED":
			if !selected(event.Object) {
				continue
			}
		case "MODIFIED":
			if !selected(event.Object) {
				event.Type = "DELETED"
			}
		}
		if err := enc.Encode(event); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

func copyResponse(w http.ResponseWriter, resp *http.Response) {
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

func objectMeta(obj map[string]interface{}) map[string]interface{} {
	m, _ := obj["metadata"].(map[string]interface{})
	return m
}

func stringMap(v interface{}) map[string]string {
	m, _ := v.(map[string]interface{})
	out := make(map[string]string, len(m))
	for k, s := range m {
		if str, ok := s.(string); ok {
			out[k] = str
		}
	}
	return out
}

func objectLabels(obj map[string]interface{}) map[string]string {
	return stringMap(objectMeta(obj)["labels"])
}

// objectCluster is the kcp.io/cluster of an object, or def when it has
// none.
func objectCluster(obj map[string]interface{}, def logicalcluster.Name) logicalcluster.Name {
	if c, ok := logicalcluster.ObjectCluster(stringMap(objectMeta(obj)["annotations"])); ok {
		return c
	}
	return def
}
