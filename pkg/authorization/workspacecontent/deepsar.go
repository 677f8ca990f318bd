package workspacecontent

import (
	"context"
	"net/http"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/identities"
)

// DeepSARHeader set to "true" on a SubjectAccessReview posted by
// system:masters asks for a deep review (see WithDeepSAR), kcp's header.
// The views' process, which reaches every shard through the front-proxy as
// system:kcp:admin, may ask it too: unlike kcp's, it does not hold
// system:masters there. A deep review tells kcp-admin nothing its own
// reading of every workspace's RBAC would not.
const DeepSARHeader = "X-Kcp-Internal-Deep-SubjectAccessReview"

type deepSARKey struct{}

// WithDeepSAR marks ctx as a check that a request in one workspace makes
// in another on its user's behalf ("bind" of an APIExport, "use" of a
// WorkspaceType, the APIExport view's apiexports/content), kcp's deep
// SubjectAccessReview: the target workspace's RBAC alone judges it, with
// no "access" to that workspace needed.
func WithDeepSAR(ctx context.Context) context.Context {
	return context.WithValue(ctx, deepSARKey{}, true)
}

// IsDeepSAR tells whether ctx carries WithDeepSAR's mark.
func IsDeepSAR(ctx context.Context) bool {
	deep, _ := ctx.Value(deepSARKey{}).(bool)
	return deep
}

// WithDeepSubjectAccessReviews marks the SubjectAccessReviews that
// system:masters or system:kcp:admin posts with
// DeepSARHeader as deep; the header means nothing on other requests or
// from anyone else.
func WithDeepSubjectAccessReviews(handler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(DeepSARHeader) == "true" && isSubjectAccessReview(r) && mayAskDeep(r) {
			r = r.WithContext(WithDeepSAR(r.Context()))
		}
		handler.ServeHTTP(w, r)
	})
}

func isSubjectAccessReview(r *http.Request) bool {
	info, ok := apirequest.RequestInfoFrom(r.Context())
	return ok && info.IsResourceRequest && info.APIGroup == authorizationv1.GroupName && info.Resource == "subjectaccessreviews"
}

func mayAskDeep(r *http.Request) bool {
	u, ok := apirequest.UserFrom(r.Context())
	return ok && (hasGroup(u, user.SystemPrivilegedGroup) || hasGroup(u, identities.KCPAdminGroup))
}

// WithDeepSARConfig returns a copy of config whose requests carry
// DeepSARHeader.
func WithDeepSARConfig(config *rest.Config) *rest.Config {
	c := rest.CopyConfig(config)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return deepSARTransport{rt} })
	return c
}

type deepSARTransport struct{ http.RoundTripper }

func (t deepSARTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(DeepSARHeader, "true")
	return t.RoundTripper.RoundTrip(r)
}

// Deep returns an authorizer that asks authz every question as a deep
// SubjectAccessReview.
func Deep(authz authorizer.Authorizer) authorizer.Authorizer { return deep{authz} }

type deep struct{ authz authorizer.Authorizer }

func (d deep) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	return d.authz.Authorize(WithDeepSAR(ctx), a)
}

func (d deep) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(d.Authorize(ctx, a))
}

func (deep) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}
