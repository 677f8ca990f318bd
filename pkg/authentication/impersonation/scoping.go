// Package impersonation scopes impersonated identities to the logical
// cluster of the request, as kcp does: whoever impersonates in a workspace
// acts as the impersonated identity there and as a plain authenticated user
// anywhere else the request leads (admission checks in a parent, a
// workspace type in root, ...). An impersonated member of system:masters
// (only system:masters may impersonate that group) stays unscoped.
//
// The upstream impersonation filter removes the impersonation headers, so
// WithRequestMarker, outermost, remembers that they were there, and
// WithScoping, after authorization, scopes the user the handlers see.
// The gatekeeper, which refuses privileged groups to non-members, is an
// authorizer: pkg/authorization/impersonation.
package impersonation

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/scope"
)

type requestedKey struct{}

// Requested tells whether a request asked for impersonation.
func Requested(h http.Header) bool {
	for name := range h {
		if name == authenticationv1.ImpersonateUserHeader || name == authenticationv1.ImpersonateGroupHeader ||
			name == authenticationv1.ImpersonateUIDHeader || strings.HasPrefix(name, authenticationv1.ImpersonateUserExtraHeaderPrefix) {
			return true
		}
	}
	return false
}

// WithRequestMarker records in the context whether the request carries
// impersonation headers. It must run before authentication.
func WithRequestMarker(handler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		handler.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), requestedKey{}, Requested(req.Header))))
	})
}

// WithScoping adds the request's logical cluster to the scopes of an
// impersonated user (and of its warrants). It must run after impersonation
// and authorization: in the request's own cluster the scope changes no
// decision.
func WithScoping(handler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx := req.Context()
		impersonated, marked := ctx.Value(requestedKey{}).(bool)
		if !marked {
			responsewriters.InternalError(w, req, fmt.Errorf("impersonation marker missing from the request context"))
			return
		}
		u, ok := request.UserFrom(ctx)
		if !impersonated || !ok || slices.Contains(u.GetGroups(), user.SystemPrivilegedGroup) {
			handler.ServeHTTP(w, req)
			return
		}
		cluster, ok := logicalcluster.ClusterFromContext(ctx)
		if !ok {
			responsewriters.InternalError(w, req, fmt.Errorf("no logical cluster in the request context"))
			return
		}
		handler.ServeHTTP(w, req.WithContext(request.WithUser(ctx, scope.ScopeTo(u, cluster))))
	})
}
