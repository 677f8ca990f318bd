// Package mediatypes answers, before a handler runs, the requests whose
// media types a resource lists but cannot serve: a body in a media type it
// only encodes to (415, as kube-apiserver's input negotiation answers one
// it does not know), and a metadata list asked for one object (406, which
// upstream's handlers answer for typed objects but not for unstructured
// ones, whose type also reads as a list).
package mediatypes

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
)

// Decoded are the media types bodies are decoded from. It is a negotiated
// serializer of the input side only: negotiation reads just
// SupportedMediaTypes.
type Decoded []runtime.SerializerInfo

// WithoutProtobuf is the media types of infos but protobuf: what kinds
// without a protobuf encoding (custom resources, kcp's kinds) decode, while
// their answers may still be protobuf metadata or tables.
func WithoutProtobuf(infos []runtime.SerializerInfo) Decoded {
	var out Decoded
	for _, info := range infos {
		if info.MediaType != runtime.ContentTypeProtobuf {
			out = append(out, info)
		}
	}
	return out
}

// Refused answers 415, naming d, when the request's Content-Type is none
// of d, and tells whether it did; codecs encode the answer for gv.
func (d Decoded) Refused(w http.ResponseWriter, req *http.Request, codecs runtime.NegotiatedSerializer, gv schema.GroupVersion) bool {
	if _, err := negotiation.NegotiateInputSerializer(req, false, d); err != nil {
		responsewriters.ErrorNegotiated(err, codecs, gv, w, req)
		return true
	}
	return false
}

// SupportedMediaTypes returns d.
func (d Decoded) SupportedMediaTypes() []runtime.SerializerInfo { return d }

// EncoderForVersion returns e: Decoded only negotiates.
func (Decoded) EncoderForVersion(e runtime.Encoder, _ runtime.GroupVersioner) runtime.Encoder {
	return e
}

// DecoderToVersion returns d: Decoded only negotiates.
func (Decoded) DecoderToVersion(d runtime.Decoder, _ runtime.GroupVersioner) runtime.Decoder {
	return d
}

// RefusedMetadataListOfOne answers 406 to a GET of one unstructured object
// whose negotiated answer is a PartialObjectMetadataList, as upstream
// answers it for typed objects, and tells whether it did. Upstream's
// conversion takes an unstructured object for a list and fails later with
// a 500.
func RefusedMetadataListOfOne(w http.ResponseWriter, req *http.Request, scope *handlers.RequestScope) bool {
	options, _, err := negotiation.NegotiateOutputMediaType(req, scope.Serializer, scope)
	if err != nil || options.Convert == nil || options.Convert.Kind != "PartialObjectMetadataList" {
		// A failed negotiation is answered by the handler itself.
		return false
	}
	notAcceptable := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable,
		Message: fmt.Sprintf("you requested PartialObjectMetadataList, but the requested object is not a list (%s)", scope.Kind.Kind),
	}}
	responsewriters.ErrorNegotiated(notAcceptable, scope.Serializer, scope.Kind.GroupVersion(), w, req)
	return true
}
