// Package applypatch answers a server-side apply whose patch does not fit
// the kind's schema (metadata that is not a map, a string where an object
// belongs) with 400 instead of upstream's 500: the field manager wraps the
// schema error in a plain error, which the handler can only report as an
// internal one, though the fault is the request's.
package applypatch

import (
	"bytes"
	"mime"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/responsewriter"
)

// schemaErrorPrefix starts upstream's error for an applied object that its
// kind's schema cannot type.
const schemaErrorPrefix = "failed to create typed patch object"

// maxStatus bounds the 500 answer held back to read its message.
const maxStatus = 64 << 10

// WithSchemaErrorsAsBadRequest returns h, except that an apply PATCH it
// answers 500 for a patch its schema cannot type is answered 400 with the
// same message. decoder reads the held-back Status in whatever media type
// it was encoded; codecs encode the new answer.
func WithSchemaErrorsAsBadRequest(h http.Handler, decoder runtime.Decoder, codecs runtime.NegotiatedSerializer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPatch || !isApply(req.Header.Get("Content-Type")) {
			h.ServeHTTP(w, req)
			return
		}
		c := &catcher{ResponseWriter: w}
		h.ServeHTTP(responsewriter.WrapForHTTP1Or2(c), req)
		if !c.holding {
			return
		}
		status := &metav1.Status{}
		if obj, _, err := decoder.Decode(c.held.Bytes(), nil, status); err == nil && obj == status &&
			strings.HasPrefix(status.Message, schemaErrorPrefix) {
			responsewriters.ErrorNegotiated(apierrors.NewBadRequest(status.Message), codecs, schema.GroupVersion{}, w, req)
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write(c.held.Bytes())
	})
}

func isApply(contentType string) bool {
	t, _, err := mime.ParseMediaType(contentType)
	return err == nil && strings.HasPrefix(t, "application/apply-patch+")
}

// catcher holds back a 500 answer and passes any other through.
type catcher struct {
	http.ResponseWriter
	written, holding bool
	held             bytes.Buffer
}

func (c *catcher) WriteHeader(code int) {
	if c.written || c.holding {
		return
	}
	if code == http.StatusInternalServerError {
		c.holding = true
		return
	}
	c.written = true
	c.ResponseWriter.WriteHeader(code)
}

func (c *catcher) Write(b []byte) (int, error) {
	if c.holding {
		if c.held.Len()+len(b) > maxStatus {
			// Too long to be a Status: give the answer up as it is.
			c.holding, c.written = false, true
			c.ResponseWriter.WriteHeader(http.StatusInternalServerError)
			if _, err := c.ResponseWriter.Write(c.held.Bytes()); err != nil {
				return 0, err
			}
			c.held.Reset()
			return c.ResponseWriter.Write(b)
		}
		return c.held.Write(b)
	}
	c.written = true
	return c.ResponseWriter.Write(b)
}

// Unwrap lets upstream's writer wrappers reach the writer below.
func (c *catcher) Unwrap() http.ResponseWriter { return c.ResponseWriter }
