package apiextensions

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/endpoints/handlers"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/registry/rest"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	kjson "sigs.k8s.io/json"
)

// Clients written for the built-in kinds (kubectl patch, client-go's typed
// clients) send strategic merge patches. A workspace may serve such kinds
// as CRDs or bind them from an export (kcp's compute exports publish
// Deployments, Services, ...); as in kcp, a CRD or bound resource of any
// group client-go registers (the core group, apps, batch,
// networking.k8s.io, ...) accepts strategic merge patches, on the resource
// and its status. A kind client-go knows merges lists by the merge keys of
// its Go type (containers by name, ...), as the built-in resource does;
// another kind of those groups merges them as its schema says
// (schemaPatchMeta). Kinds of other groups answer 415, as in kcp.

// builtinKind returns a new object of the built-in Go type of gvk, if
// client-go knows the kind.
func builtinKind(gvk schema.GroupVersionKind) (runtime.Object, bool) {
	if !clientgoscheme.Scheme.Recognizes(gvk) {
		return nil, false
	}
	obj, err := clientgoscheme.Scheme.New(gvk)
	if err != nil {
		return nil, false
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, true
}

// acceptsStrategicMergePatch tells whether custom resources of group take
// strategic merge patches: those of the groups client-go registers, as in
// kcp.
func acceptsStrategicMergePatch(group string) bool {
	return clientgoscheme.Scheme.IsGroupRegistered(group)
}

// isStrategicMergePatch tells whether req's body is a strategic merge patch.
func isStrategicMergePatch(req *http.Request) bool {
	mediaType, _, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
	return err == nil && mediaType == string(types.StrategicMergePatchType)
}

// patchHandler returns the handler of a patch of storage. A strategic merge
// patch of a built-in kind is applied with that kind's patch metadata, one
// of another kind of a built-in group with the metadata of its structural
// schema; any other patch is served as for every custom resource.
func patchHandler(req *http.Request, storage rest.Patcher, scope *handlers.RequestScope, admit admission.Interface, structural *structuralschema.Structural) http.HandlerFunc {
	if !isStrategicMergePatch(req) || !acceptsStrategicMergePatch(scope.Kind.Group) {
		return handlers.PatchResource(storage, scope, admit, patchTypes)
	}
	if _, ok := builtinKind(scope.Kind); !ok {
		return schemaStrategicPatch(storage, scope, admit, schemaPatchMeta{schema: structural, objectRoot: true})
	}
	smp := *scope
	smp.UnsafeConvertor = strategicPatchConvertor{ObjectConvertor: scope.UnsafeConvertor}
	return handlers.PatchResource(strategicPatchStorage{Patcher: storage, kind: scope.Kind}, &smp, admit,
		append(patchTypes[:len(patchTypes):len(patchTypes)], string(types.StrategicMergePatchType)))
}

// strategicPatchStorage is the storage of a strategic merge patch: the
// patch handler takes the schema of the patch (its merge keys) from New,
// which is the built-in Go type here; it decodes nothing into it.
type strategicPatchStorage struct {
	rest.Patcher
	kind schema.GroupVersionKind
}

func (s strategicPatchStorage) New() runtime.Object {
	obj, _ := builtinKind(s.kind)
	return obj
}

// strategicPatchConvertor converts custom resources as the resource's own
// convertor does, except the built-in object that strategicPatchStorage.New
// returns, which is the patch's schema as it is. Results are copies: the
// patch merges into the map of the object it is given, which may be shared
// with the watch cache.
type strategicPatchConvertor struct {
	runtime.ObjectConvertor
}

func (c strategicPatchConvertor) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	if _, ok := in.(runtime.Unstructured); !ok {
		return in, nil
	}
	out, err := c.ObjectConvertor.ConvertToVersion(in, target)
	if err != nil {
		return nil, err
	}
	if out == in {
		out = out.DeepCopyObject()
	}
	return out, nil
}

// schemaStrategicPatch serves a strategic merge patch whose merge keys meta
// gives. The upstream patch handler takes them only from a Go type; so the
// patch is served as an empty JSON merge patch by the upstream handler
// (admission, field manager, retries on conflicts as for every patch) whose
// decoder applies the strategic merge patch to the current object before
// decoding it, pruning and defaulting included.
func schemaStrategicPatch(storage rest.Patcher, scope *handlers.RequestScope, admit admission.Interface, meta strategicpatch.LookupPatchMeta) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		body, err := readPatch(req, scope.MaxRequestBodyBytes)
		if err != nil {
			responsewriters.ErrorNegotiated(err, scope.Serializer, scope.Kind.GroupVersion(), w, req)
			return
		}
		patch := map[string]interface{}{}
		if err := kjson.UnmarshalCaseSensitivePreserveInts(body, &patch); err != nil {
			responsewriters.ErrorNegotiated(apierrors.NewBadRequest(fmt.Sprintf("decode the strategic merge patch: %v", err)), scope.Serializer, scope.Kind.GroupVersion(), w, req)
			return
		}
		smp := *scope
		smp.Serializer = strategicPatchSerializer{NegotiatedSerializer: scope.Serializer, patch: patch, meta: meta}
		merge := req.Clone(req.Context())
		merge.Body = io.NopCloser(strings.NewReader("{}"))
		merge.ContentLength = 2
		merge.Header.Set("Content-Type", string(types.MergePatchType))
		handlers.PatchResource(storage, &smp, admit, []string{string(types.MergePatchType)}).ServeHTTP(w, merge)
		// The audit event records the patch the client sent.
		audit.LogRequestPatch(req.Context(), body)
	}
}

// readPatch reads the body of req up to limit bytes (0: no limit).
func readPatch(req *http.Request, limit int64) ([]byte, error) {
	defer req.Body.Close()
	r := io.Reader(req.Body)
	if limit > 0 {
		r = io.LimitReader(req.Body, limit+1)
	}
	body, err := io.ReadAll(r)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("read the patch: %v", err))
	}
	if limit > 0 && int64(len(body)) > limit {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", limit))
	}
	return body, nil
}

// strategicPatchSerializer is the serializer of a request scope whose
// decoders apply a strategic merge patch to the object they decode.
type strategicPatchSerializer struct {
	runtime.NegotiatedSerializer
	patch map[string]interface{}
	meta  strategicpatch.LookupPatchMeta
}

func (s strategicPatchSerializer) DecoderToVersion(d runtime.Decoder, gv runtime.GroupVersioner) runtime.Decoder {
	return strategicPatchDecoder{Decoder: s.NegotiatedSerializer.DecoderToVersion(d, gv), patch: s.patch, meta: s.meta}
}

// strategicPatchDecoder applies its patch to the JSON of an object, then
// decodes the result.
type strategicPatchDecoder struct {
	runtime.Decoder
	patch map[string]interface{}
	meta  strategicpatch.LookupPatchMeta
}

func (d strategicPatchDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	patched, err := applyStrategicPatch(data, d.patch, d.meta)
	if err != nil {
		return nil, nil, err
	}
	return d.Decoder.Decode(patched, defaults, into)
}

// applyStrategicPatch applies patch to the JSON object original. Its
// errors are the API errors the upstream handler answers for them.
func applyStrategicPatch(original []byte, patch map[string]interface{}, meta strategicpatch.LookupPatchMeta) ([]byte, error) {
	current := map[string]interface{}{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(original, &current); err != nil {
		return nil, err
	}
	// mergeMap changes the patch it is given: each application gets a copy.
	merged, err := strategicpatch.StrategicMergeMapPatchUsingLookupPatchMeta(current, runtime.DeepCopyJSON(patch), meta)
	switch err {
	case nil:
		return json.Marshal(merged)
	case mergepatch.ErrBadJSONDoc, mergepatch.ErrBadPatchFormatForPrimitiveList, mergepatch.ErrBadPatchFormatForRetainKeys,
		mergepatch.ErrBadPatchFormatForSetElementOrderList, mergepatch.ErrUnsupportedStrategicMergePatchFormat:
		return nil, apierrors.NewBadRequest(err.Error())
	case mergepatch.ErrNoListOfLists, mergepatch.ErrPatchContentNotMatchRetainKeys:
		return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
	}
	return nil, apierrors.NewBadRequest(fmt.Sprintf("apply the strategic merge patch: %v", err))
}
