// Package requestbody refuses request bodies in media types a resource
// lists for its answers but cannot decode, with the 415 kube-apiserver's
// input negotiation gives, before a handler reaches a decoder that has
// none.
package requestbody

import (
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
)

// MediaTypes are the media types bodies are decoded from. It is a
// negotiated serializer of the input side only: negotiation reads just
// SupportedMediaTypes.
type MediaTypes []runtime.SerializerInfo

// WithoutProtobuf is the media types of infos but protobuf: what kinds
// without a protobuf encoding (custom resources, kcp's kinds) decode, while
// their answers may still be protobuf metadata or tables.
func WithoutProtobuf(infos []runtime.SerializerInfo) MediaTypes {
	var out MediaTypes
	for _, info := range infos {
		if info.MediaType != runtime.ContentTypeProtobuf {
			out = append(out, info)
		}
	}
	return out
}

// Refused answers 415, naming m, when the request's Content-Type is none
// of m, and tells whether it did; codecs encode the answer for gv.
func (m MediaTypes) Refused(w http.ResponseWriter, req *http.Request, codecs runtime.NegotiatedSerializer, gv schema.GroupVersion) bool {
	if _, err := negotiation.NegotiateInputSerializer(req, false, m); err != nil {
		responsewriters.ErrorNegotiated(err, codecs, gv, w, req)
		return true
	}
	return false
}

// SupportedMediaTypes returns m.
func (m MediaTypes) SupportedMediaTypes() []runtime.SerializerInfo { return m }

// EncoderForVersion returns e: MediaTypes only negotiates.
func (MediaTypes) EncoderForVersion(e runtime.Encoder, _ runtime.GroupVersioner) runtime.Encoder {
	return e
}

// DecoderToVersion returns d: MediaTypes only negotiates.
func (MediaTypes) DecoderToVersion(d runtime.Decoder, _ runtime.GroupVersioner) runtime.Decoder {
	return d
}
