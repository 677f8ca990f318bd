package registry

import (
	"net/http"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/shardplane/shardplane/pkg/mediatypes"
)

// protobufDecodable is what a Go type needs for a protobuf body to decode
// into it.
var protobufDecodable = reflect.TypeFor[interface{ Unmarshal([]byte) error }]()

// WithDecodableBodies answers 415 to a create or update whose body is in a
// media type the served kind has no decoder of: kcp's kinds (tenancy.kcp.io,
// apis.kcp.io, ...) have no protobuf encoding, which the codecs still list
// for the metadata and Table answers every group gives. The answer names
// the media types that are read, as kube-apiserver's input negotiation
// does; without it such a body failed later with a 400 about marshalling.
func WithDecodableBodies(h http.Handler, scheme *runtime.Scheme, codecs runtime.NegotiatedSerializer) http.Handler {
	decoded := mediatypes.WithoutProtobuf(codecs.SupportedMediaTypes())
	withoutProtobuf := map[schema.GroupVersion]bool{}
	for gv := range groupVersionsWithoutProtobuf(scheme) {
		withoutProtobuf[gv] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		info, ok := apirequest.RequestInfoFrom(req.Context())
		if ok && info.IsResourceRequest && (info.Verb == "create" || info.Verb == "update") &&
			withoutProtobuf[schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}] {
			if decoded.Refused(w, req, codecs, schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}) {
				return
			}
		}
		h.ServeHTTP(w, req)
	})
}

// groupVersionsWithoutProtobuf are the group versions of scheme none of
// whose own kinds decode from protobuf (the option and event kinds every
// group version registers from apimachinery do not count).
func groupVersionsWithoutProtobuf(scheme *runtime.Scheme) map[schema.GroupVersion]struct{} {
	has := map[schema.GroupVersion]bool{}
	for gvk, t := range scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal || strings.HasPrefix(t.PkgPath(), "k8s.io/apimachinery/") {
			continue
		}
		gv := gvk.GroupVersion()
		has[gv] = has[gv] || reflect.PointerTo(t).Implements(protobufDecodable)
	}
	out := map[schema.GroupVersion]struct{}{}
	for gv, ok := range has {
		if !ok {
			out[gv] = struct{}{}
		}
	}
	return out
}
