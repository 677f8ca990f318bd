package apiextensions

import (
	"mime"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/endpoints/handlers"
	"k8s.io/apiserver/pkg/registry/rest"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// Clients written for the built-in kinds (kubectl patch, client-go's typed
// clients) send strategic merge patches. A workspace may serve such kinds
// as CRDs or bind them from an export (kcp's compute exports publish
// Deployments, Services, ...); as in kcp, those accept strategic merge
// patches too. The patch merges lists by the merge keys of the built-in Go
// type (containers by name, ...), as it would for the built-in resource.
// kcp accepts them for any kind of a built-in group; here only for the
// kinds client-go knows, whose Go type tells the merge keys: other kinds
// answer 415 as every custom resource does.

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

// isStrategicMergePatch tells whether req's body is a strategic merge patch.
func isStrategicMergePatch(req *http.Request) bool {
	mediaType, _, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
	return err == nil && mediaType == string(types.StrategicMergePatchType)
}

// patchHandler returns the handler of a patch of storage. A strategic merge
// patch of a built-in kind is applied with that kind's patch metadata; any
// other patch type is served as for every custom resource.
func patchHandler(req *http.Request, storage rest.Patcher, scope *handlers.RequestScope, admit admission.Interface) http.HandlerFunc {
	if _, ok := builtinKind(scope.Kind); !ok || !isStrategicMergePatch(req) {
		return handlers.PatchResource(storage, scope, admit, patchTypes)
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
