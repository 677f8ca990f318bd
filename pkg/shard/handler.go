package shard

import (
	"net/http"
	"strconv"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	"github.com/shardplane/shardplane/pkg/applypatch"
	"github.com/shardplane/shardplane/pkg/authentication/impersonation"
	"github.com/shardplane/shardplane/pkg/authentication/serviceaccount"
	"github.com/shardplane/shardplane/pkg/authentication/stackreserve"
	"github.com/shardplane/shardplane/pkg/authorization"
	"github.com/shardplane/shardplane/pkg/authorization/workspacecontent"
	"github.com/shardplane/shardplane/pkg/bootstrap"
	"github.com/shardplane/shardplane/pkg/clusterhold"
	"github.com/shardplane/shardplane/pkg/clusterpath"
	"github.com/shardplane/shardplane/pkg/fairness"
	"github.com/shardplane/shardplane/pkg/home"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/panics"
	"github.com/shardplane/shardplane/pkg/registry"
	"github.com/shardplane/shardplane/pkg/responsecompression"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// buildHandlerChain is the shard's handler chain, outermost filter last in
// this function (the table in docs/architecture.md lists them outermost
// first). The generic API server calls it once with its API handler.
func (c *Config) buildHandlerChain(apiHandler http.Handler, gc *genericapiserver.Config) http.Handler {
	// kcp's kinds decode no protobuf bodies; core group custom resources
	// are served below /api too.
	apiHandler = c.apiExtensions.server.WrapAPIHandler(registry.WithDecodableBodies(apiHandler, legacyscheme.Scheme, legacyscheme.Codecs))
	// Shards exist outside root only where their export is bound, as in
	// kcp; how the shard shares itself between tenants (APF's
	// configuration) only in system:admin.
	apiHandler = c.apiExtensions.server.WithLimitedKinds(apiHandler)
	apiHandler = applypatch.WithSchemaErrorsAsBadRequest(apiHandler, legacyscheme.Codecs.UniversalDeserializer(), legacyscheme.Codecs)
	// Root's exports of the shard's own kinds (kcp's tenancy.kcp.io, ...)
	// qualify wildcard requests for them; on a shard without root they are
	// read from the cache server.
	systemExportIdentity := bootstrap.SystemExportIdentity(c.Informers.kcp.apiExports, c.Informers.global.APIExports)
	apiHandler = clusterpath.WithResourceIdentity(apiHandler, gc.Serializer, systemExportIdentity)
	// The checks a SubjectAccessReview asks for are audited as kcp's are.
	apiHandler = authorization.WithSubjectAccessReviewAuditDomain(apiHandler)
	// system:masters (the views' process) asks kcp's deep reviews by header.
	apiHandler = workspacecontent.WithDeepSubjectAccessReviews(apiHandler)
	inner := clusterpath.WithUnresolvedPaths(clusterpath.WithWildcardVerbs(apiHandler, gc.Serializer), gc.Serializer)
	// A logical cluster moving away holds writes for its cut-over; what
	// its stored LogicalCluster says holds them also after a restart.
	marks := func(cluster logicalcluster.Name) clusterhold.Marks {
		lc := c.Informers.kcp.logicalCluster(cluster)
		if lc == nil {
			return clusterhold.Marks{}
		}
		at, _ := strconv.ParseUint(lc.Annotations[migrationv1alpha1.MovedInAtAnnotationKey], 10, 64)
		return clusterhold.Marks{
			ServedElsewhere: lc.Annotations[migrationv1alpha1.ServedElsewhereAnnotationKey] != "",
			WritesHeld:      lc.Annotations[migrationv1alpha1.WritesHeldAnnotationKey] != "",
			MovedInAt:       at,
		}
	}
	inner = clusterhold.WithHeldWrites(inner, c.holds, gc.Serializer, marks)
	// Large GETs and LISTs are gzipped beside their encoding.
	inner = responsecompression.WithGzip(inner)
	// A workspace's limits of watches per user, of request bodies, of
	// requests running at once and of their share of request time.
	limits := &fairness.Limits{
		MaxWatchesPerUser:   c.Options.MaxWatchesPerUser,
		MaxRequestsInFlight: c.Options.MaxRequestsInFlightPerWorkspace,
		MaxRequestTimeShare: c.Options.MaxRequestTimeSharePerWorkspace,
		LongRunning:         gc.LongRunningFunc,
		Codecs:              gc.Serializer,
		Annotations: func(cluster logicalcluster.Name) map[string]string {
			if lc := c.Informers.kcp.logicalCluster(cluster); lc != nil {
				return lc.Annotations
			}
			return nil
		},
	}
	inner = limits.WithLimits(inner)
	// Impersonated identities are scoped to the request's cluster after
	// upstream impersonation and authorization.
	inner = impersonation.WithScoping(c.withHomeWorkspaces(inner, gc))
	// Authentication is the first step of a request's own goroutine: its
	// stack grows there once instead of deep in the chain.
	gc.Authentication.Authenticator = stackreserve.WithStackReserve(gc.Authentication.Authenticator)
	// Recovered here, a handler's panic stays in the timeout filter's
	// goroutine; the outermost recovery below takes those of the filters
	// around it all.
	// Only the request's own authorization annotates its audit event, as in
	// kcp: every other caller of the authorizer gets it without.
	authz := gc.Authorization.Authorizer
	gc.Authorization.Authorizer = authorization.ForRequests(authz)
	chain := impersonation.WithRequestMarker(genericapiserver.DefaultBuildHandlerChain(panics.WithRecovery(inner), gc))
	gc.Authorization.Authorizer = authz
	chain = c.apiExtensions.wrapHandler(chain)
	if gc.AuditBackend != nil {
		// kcp's workspace annotation, only where audit events are written.
		chain = clusterpath.WithAuditAnnotation(chain)
	}
	chain = clusterpath.WithCluster(chain, gc.Serializer, c.Informers.kcp.resolvePath)
	// In-cluster clients of a workspace's service account send no /clusters/.
	chain = serviceaccount.WithInClusterRewrite(chain)
	// /clusters/~ is the caller's home.
	chain = home.WithTildePath(chain, gc.Authentication.Authenticator)
	chain = withVirtualWorkspaces(withEmbeddedCache(chain, c.embeddedCache), c.virtualWorkspaces)
	informers := c.Informers.all()
	synced := func() bool { return wildcardinformer.Synced(informers...) }
	// The whole chain, the in-process virtual workspaces included.
	return panics.WithRecovery(withSyncedCaches(chain, gc.Serializer, synced, gc.LoopbackClientConfig.BearerToken))
}
