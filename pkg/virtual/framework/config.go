package framework

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	utilsets "k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/request/union"
	tokencache "k8s.io/apiserver/pkg/authentication/token/cache"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/util/compatibility"
	webhooktoken "k8s.io/apiserver/plugin/pkg/authenticator/token/webhook"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/authorization/workspacecontent"
	"github.com/shardplane/shardplane/pkg/panics"
	"github.com/shardplane/shardplane/pkg/proxyauth"
	"github.com/shardplane/shardplane/pkg/version"
	"github.com/shardplane/shardplane/pkg/virtual/viewurl"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// ViewsConfig is what the server gives the views it mounts.
type ViewsConfig struct {
	// Shard reaches the shard with the privileged credential of
	// --kubeconfig.
	Shard *rest.Config
	// Authorizer authorizes callers in the logical cluster of the context
	// by SubjectAccessReviews on AuthorizationConfig's server.
	Authorizer authorizer.Authorizer
	// AuthorizationConfig reaches the server reviews are posted to.
	AuthorizationConfig *rest.Config
	// Cache reaches the cache server (--cache-kubeconfig); nil without it.
	Cache *rest.Config
}

// Mounted are views and the informers they read, which the server runs.
type Mounted struct {
	Views     Views
	Informers []*wildcardinformer.Informer
}

// BuildViews builds the views of a server.
type BuildViews func(ViewsConfig) (*Mounted, error)

// Config is the standalone server's configuration.
type Config struct {
	Generic *genericapiserver.Config
	Mounted *Mounted
}

// CompletedConfig is a Config with every default filled in.
type CompletedConfig struct {
	Generic genericapiserver.CompletedConfig
	Mounted *Mounted
}

// Complete fills in the defaults of the generic server.
func (c *Config) Complete() CompletedConfig {
	return CompletedConfig{Generic: c.Generic.Complete(nil), Mounted: c.Mounted}
}

// NewConfig builds the server: serving, the shard's kinds of
// authentication, authorization of its own paths, and the views.
func NewConfig(ctx context.Context, o *Options, build BuildViews) (*Config, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := o.prepareServingCert(); err != nil {
		return nil, err
	}
	gc := genericapiserver.NewConfig(scheme.Codecs)
	gc.EffectiveVersion = version.Project(compatibility.DefaultBuildEffectiveVersion())
	gc.ExternalAddress = strings.TrimPrefix(o.baseURL(), "https://")
	gc.ShutdownWatchTerminationGracePeriod = 5 * time.Second
	if err := o.SecureServing.ApplyTo(&gc.SecureServing, &gc.LoopbackClientConfig); err != nil {
		return nil, err
	}
	authConfig, err := o.Authentication.ToAuthenticationConfig()
	if err != nil {
		return nil, err
	}
	if authConfig.ClientCAContentProvider != nil {
		if err := gc.Authentication.ApplyClientCert(authConfig.ClientCAContentProvider, gc.SecureServing); err != nil {
			return nil, fmt.Errorf("client CA: %w", err)
		}
	}
	if rh := authConfig.RequestHeaderConfig; rh != nil && rh.CAContentProvider != nil {
		if err := gc.Authentication.ApplyClientCert(rh.CAContentProvider, gc.SecureServing); err != nil {
			return nil, fmt.Errorf("requestheader client CA: %w", err)
		}
	}
	gc.Authentication.RequestHeaderConfig = authConfig.RequestHeaderConfig
	authn, _, _, _, err := authConfig.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("authentication: %w", err)
	}
	if o.AuthenticationKubeconfig != "" {
		reviews, err := tokenReviews(o.AuthenticationKubeconfig, o.TokenReviewCacheTTL, gc.Authentication.APIAudiences)
		if err != nil {
			return nil, err
		}
		// Before the others, anonymous last among them, so that a token only
		// the shard knows is not taken for anonymous.
		authn = union.New(reviews, authn)
	}

	shard, err := loadKubeconfig(o.Kubeconfig, o.Context)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	authzConfig := shard
	if o.ExternalLogicalClusterAdminKubeconfig != "" {
		if authzConfig, err = loadKubeconfig(o.ExternalLogicalClusterAdminKubeconfig, ""); err != nil {
			return nil, fmt.Errorf("--external-logical-cluster-admin-kubeconfig: %w", err)
		}
	}
	// Service account tokens, which the front-proxy passes on, are
	// verified by the shard of their workspace.
	saTokens, err := newServiceAccountTokenReviews(authzConfig)
	if err != nil {
		return nil, err
	}
	authn = union.New(bearertoken.New(saTokens), authn)
	// The front-proxy's certificate is verified once per connection.
	gc.Authentication.Authenticator = proxyauth.Prepend(authConfig.RequestHeaderConfig, gc.Authentication.APIAudiences, authn)
	gc.Authorization.Authorizer = pathAuthorizer{}
	genericapiserver.AuthorizeClientBearerToken(gc.LoopbackClientConfig, &gc.Authentication, &gc.Authorization)
	gc.LongRunningFunc = longRunning
	gc.BuildHandlerChainFunc = buildHandlerChain
	if err := o.Audit.ApplyTo(gc); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}

	// kcp's views ask deep reviews: a permission granted in the target
	// workspace counts without access to it.
	reviews, err := NewSubjectAccessReviews(workspacecontent.WithDeepSARConfig(authzConfig))
	if err != nil {
		return nil, err
	}
	var cache *rest.Config
	if o.CacheKubeconfig != "" {
		if cache, err = loadKubeconfig(o.CacheKubeconfig, ""); err != nil {
			return nil, fmt.Errorf("--cache-kubeconfig: %w", err)
		}
	}
	mounted, err := build(ViewsConfig{Shard: shard, Authorizer: reviews, AuthorizationConfig: authzConfig, Cache: cache})
	if err != nil {
		return nil, err
	}
	return &Config{Generic: gc, Mounted: mounted}, nil
}

// buildHandlerChain is upstream's chain. Panics are recovered below the
// timeout filter, whose goroutine would turn them into new ones, and around
// everything.
func buildHandlerChain(apiHandler http.Handler, c *genericapiserver.Config) http.Handler {
	return panics.WithRecovery(genericapiserver.DefaultBuildHandlerChain(panics.WithRecovery(apiHandler), c))
}

// pathAuthorizer lets everyone reach the views, which authorize callers
// themselves, and the health checks; the rest (metrics, debug) is for
// system:masters, who are allowed before this is asked.
type pathAuthorizer struct{}

var publicPaths = sets.New("/healthz", "/livez", "/readyz", "/version")

func (pathAuthorizer) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if !a.IsResourceRequest() {
		p := a.GetPath()
		if viewurl.Serves(p) || publicPaths.Has(p) || strings.HasPrefix(p, "/healthz/") || strings.HasPrefix(p, "/livez/") || strings.HasPrefix(p, "/readyz/") {
			return authorizer.DecisionAllow, "", nil
		}
	}
	if u := a.GetUser(); u != nil && sets.New(u.GetGroups()...).Has(user.SystemPrivilegedGroup) {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "only system:masters may", nil
}

// longRunning tells which requests the server must not time out: watches
// through the views (the generic check sees a non-resource path).
func longRunning(req *http.Request, info *apirequest.RequestInfo) bool {
	q := req.URL.Query()
	if w := q.Get("watch"); w == "true" || w == "1" {
		return true
	}
	if strings.Contains(req.URL.Path, "/watch/") {
		return true
	}
	return basicLongRunning(req, info)
}

var basicLongRunning = genericfilters.BasicLongRunningRequestCheck(utilsets.NewString("watch"), utilsets.NewString())

// ConditionsAwareAuthorize converts the unconditional decision.
func (p pathAuthorizer) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(p.Authorize(ctx, a))
}

// EvaluateConditions is not supported.
func (pathAuthorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// tokenReviews authenticates bearer tokens by TokenReviews on the server of
// kubeconfig, caching the answers for ttl (failures for a tenth of it), as
// kcp's delegated authentication does.
func tokenReviews(kubeconfig string, ttl time.Duration, audiences authenticator.Audiences) (authenticator.Request, error) {
	cfg, err := loadKubeconfig(kubeconfig, "")
	if err != nil {
		return nil, fmt.Errorf("--authentication-kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("--authentication-kubeconfig: %w", err)
	}
	backoff := genericoptions.DefaultAuthWebhookRetryBackoff()
	reviewer, err := webhooktoken.NewFromInterface(client.AuthenticationV1(), audiences, *backoff, 10*time.Second, webhooktoken.AuthenticatorMetrics{
		RecordRequestTotal:   func(context.Context, string) {},
		RecordRequestLatency: func(context.Context, string, float64) {},
	})
	if err != nil {
		return nil, fmt.Errorf("token reviews: %w", err)
	}
	return bearertoken.New(tokencache.New(reviewer, false, ttl, ttl/10)), nil
}
