package initializingworkspaces

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

var logicalClusters = corev1alpha1.Resource("logicalclusters")

// serveCollection lists or watches the LogicalClusters of t.cluster (or of
// all clusters) that are in the view.
func (h *handler) serveCollection(w http.ResponseWriter, req *http.Request, t target) {
	query := req.URL.Query()
	resp, err := h.shard.do(req.Context(), http.MethodGet, t.cluster.RequestPath()+logicalClustersPath, query, nil)
	if err != nil {
		writeError(w, err)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
		writeError(w, statusError(resp.StatusCode, body))
		return
	}
	if query.Get("watch") == "true" || query.Get("watch") == "1" {
		h.streamWatch(w, req, resp.Body, t.name)
		return
	}
	h.writeList(w, resp.Body, t.name)
}

// rawList is a list whose items are kept as the shard sent them.
type rawList struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ListMeta   `json:"metadata"`
	Items           []json.RawMessage `json:"items"`
}

// writeList answers with the items of the shard's list that are in the view.
func (h *handler) writeList(w http.ResponseWriter, body io.Reader, name string) {
	var list rawList
	if err := json.NewDecoder(body).Decode(&list); err != nil {
		writeError(w, fmt.Errorf("decode the shard's list: %w", err))
		return
	}
	items := make([]json.RawMessage, 0, len(list.Items))
	for _, raw := range list.Items {
		lc := &corev1alpha1.LogicalCluster{}
		if err := json.Unmarshal(raw, lc); err == nil && h.lifecycle.waitsFor(lc, name) {
			items = append(items, raw)
		}
	}
	list.Items = items
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(list)
}

// rawEvent is a watch event whose object is kept as the shard sent it.
type rawEvent struct {
	Type   watch.EventType `json:"type"`
	Object json.RawMessage `json:"object"`
}

// streamWatch forwards the shard's watch events of LogicalClusters in the
// view; a cluster that leaves the view is DELETED.
func (h *handler) streamWatch(w http.ResponseWriter, req *http.Request, body io.Reader, name string) {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	filter := newWatchFilter(h.lifecycle, name)
	dec := json.NewDecoder(body)
	enc := json.NewEncoder(w)
	for {
		var ev rawEvent
		if err := dec.Decode(&ev); err != nil {
			if !errors.Is(err, io.EOF) && req.Context().Err() == nil {
				klog.FromContext(req.Context()).V(4).Info("Watch of LogicalClusters ended", "err", err)
			}
			return
		}
		out, ok := filter.event(ev)
		if !ok {
			continue
		}
		if err := enc.Encode(out); err != nil {
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
}

// watchFilter remembers, for one watch, which clusters it showed and which
// it has told the client are gone.
type watchFilter struct {
	lifecycle Lifecycle
	name      string
	shown     map[logicalcluster.Name]bool
	told      map[logicalcluster.Name]bool
}

func newWatchFilter(l Lifecycle, name string) *watchFilter {
	return &watchFilter{lifecycle: l, name: name, shown: map[logicalcluster.Name]bool{}, told: map[logicalcluster.Name]bool{}}
}

// event returns what the client sees of a shard event, and false when
// nothing. A cluster that enters the view is ADDED; one that leaves it is
// DELETED once: the client may
// have listed it before the watch began, so clusters that were created for
// the initializer (terminator) and passed it are told too.
func (f *watchFilter) event(ev rawEvent) (rawEvent, bool) {
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted:
	default:
		return ev, true // bookmarks and errors
	}
	lc := &corev1alpha1.LogicalCluster{}
	if err := json.Unmarshal(ev.Object, lc); err != nil {
		return rawEvent{}, false
	}
	cluster, _ := logicalcluster.ObjectCluster(lc.Annotations)
	if ev.Type != watch.Deleted && f.lifecycle.waitsFor(lc, f.name) {
		// A cluster entering the view is ADDED, as a watch with a
		// selector reports an object that starts to match.
		if !f.shown[cluster] {
			ev.Type = watch.Added
		}
		f.shown[cluster] = true
		delete(f.told, cluster)
		return ev, true
	}
	if f.shown[cluster] || (!f.told[cluster] && f.lifecycle.passed(lc, f.name)) {
		delete(f.shown, cluster)
		f.told[cluster] = true
		return rawEvent{Type: watch.Deleted, Object: ev.Object}, true
	}
	return rawEvent{}, false
}

// serveLogicalCluster serves a cluster's LogicalClusters: the collection
// (list, watch) and "cluster" (get; status update or patch that removes the
// initializer or terminator of the view).
func (h *handler) serveLogicalCluster(w http.ResponseWriter, req *http.Request, t target, name, subresource string) {
	if name == "" {
		if !readVerbs.Has(req.Method) {
			writeError(w, apierrors.NewMethodNotSupported(logicalClusters, strings.ToLower(req.Method)))
			return
		}
		h.serveCollection(w, req, t)
		return
	}
	if name != corev1alpha1.LogicalClusterName || (subresource != "" && subresource != "status") {
		writeError(w, apierrors.NewNotFound(logicalClusters, name))
		return
	}
	write := req.Method == http.MethodPut || req.Method == http.MethodPatch
	if !readVerbs.Has(req.Method) && !(write && subresource == "status") {
		writeError(w, apierrors.NewMethodNotSupported(logicalClusters, strings.ToLower(req.Method)))
		return
	}
	ctx := req.Context()
	current, raw, err := h.shard.getRaw(ctx, t.cluster)
	if err != nil {
		writeError(w, err)
		return
	}
	if !h.lifecycle.waitsFor(current, t.name) {
		writeError(w, apierrors.NewNotFound(logicalClusters, name))
		return
	}
	if !write {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(raw)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxBody))
	if err != nil {
		writeError(w, apierrors.NewBadRequest(fmt.Sprintf("read the request body: %v", err)))
		return
	}
	updated, err := h.applyWrite(req, raw, body)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := h.validateRelease(current, updated, t.name); err != nil {
		writeError(w, err)
		return
	}
	// The view writes the release itself, and nothing else of what the
	// caller sent.
	released := current.DeepCopy()
	h.lifecycle.release(released, t.name)
	released.APIVersion, released.Kind = corev1alpha1.SchemeGroupVersion.String(), "LogicalCluster"
	out, err := json.Marshal(released)
	if err != nil {
		writeError(w, err)
		return
	}
	resp, err := h.shard.do(ctx, http.MethodPut, lcPath(t.cluster, "status"), nil, out)
	if err != nil {
		writeError(w, err)
		return
	}
	result := &corev1alpha1.LogicalCluster{}
	stored, err := readObject(resp, result)
	if err != nil {
		writeError(w, err)
		return
	}
	klog.FromContext(ctx).V(2).Info("Released a logical cluster", "cluster", t.cluster, h.lifecycle.noun(), t.name)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(stored)
}

// applyWrite returns the LogicalCluster that a PUT or PATCH of the status
// asks for, given the current object's JSON.
func (h *handler) applyWrite(req *http.Request, current, body []byte) (*corev1alpha1.LogicalCluster, error) {
	result := body
	if req.Method == http.MethodPut {
		switch mediaType(req.Header.Get("Content-Type")) {
		case "", runtime.ContentTypeJSON:
		case runtime.ContentTypeYAML:
			var err error
			if result, err = yaml.YAMLToJSON(body); err != nil {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("decode the LogicalCluster: %v", err))
			}
		default:
			return nil, negotiation.NewUnsupportedMediaTypeError([]string{runtime.ContentTypeJSON, runtime.ContentTypeYAML})
		}
	}
	if req.Method == http.MethodPatch {
		var err error
		switch mediaType(req.Header.Get("Content-Type")) {
		case string(types.JSONPatchType):
			var patch jsonpatch.Patch
			if patch, err = jsonpatch.DecodePatch(body); err == nil {
				result, err = patch.Apply(current)
			}
		case string(types.MergePatchType):
			result, err = jsonpatch.MergePatch(current, body)
		case string(types.StrategicMergePatchType):
			result, err = strategicpatch.StrategicMergePatch(current, body, &corev1alpha1.LogicalCluster{})
		default:
			return nil, &apierrors.StatusError{ErrStatus: metav1.Status{
				Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
				Message: fmt.Sprintf("patch type %q is not supported here: use a JSON merge, JSON or strategic merge patch, or a PUT", req.Header.Get("Content-Type")),
			}}
		}
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("apply the patch: %v", err))
		}
	}
	lc := &corev1alpha1.LogicalCluster{}
	if err := json.Unmarshal(result, lc); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("decode the LogicalCluster: %v", err))
	}
	return lc, nil
}

// validateRelease accepts an update that removes the view's initializer
// (terminator) from the status of current, and changes nothing else.
func (h *handler) validateRelease(current, updated *corev1alpha1.LogicalCluster, name string) error {
	if updated.ResourceVersion != "" && updated.ResourceVersion != current.ResourceVersion {
		return apierrors.NewConflict(logicalClusters, corev1alpha1.LogicalClusterName,
			errors.New("the object has been modified; read it again and remove the "+h.lifecycle.noun()+" from the latest version"))
	}
	want := current.DeepCopy()
	h.lifecycle.release(want, name)
	if apiequality.Semantic.DeepEqual(want.Status, updated.Status) {
		return nil
	}
	path := field.NewPath("status")
	if l := h.lifecycle.pending(updated); !apiequality.Semantic.DeepEqual(h.lifecycle.pending(want), l) {
		path = path.Child(h.lifecycle.noun() + "s")
	}
	return apierrors.NewInvalid(corev1alpha1.Kind("LogicalCluster"), corev1alpha1.LogicalClusterName, field.ErrorList{
		field.Forbidden(path, fmt.Sprintf("only removing the %s %q from %s is allowed here", h.lifecycle.noun(), name, h.lifecycle.statusField())),
	})
}

// mediaType strips parameters from a Content-Type.
func mediaType(contentType string) string {
	t, _, _ := strings.Cut(contentType, ";")
	return strings.TrimSpace(t)
}
