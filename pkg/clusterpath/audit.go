package clusterpath

import (
	"net/http"

	"k8s.io/apiserver/pkg/audit"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// AuditWorkspaceAnnotation is kcp's audit annotation naming the logical
// cluster of a request.
const AuditWorkspaceAnnotation = "tenancy.kcp.io/workspace"

// WithAuditAnnotation annotates the request's audit event with its logical
// cluster, as kcp does: the events of every stage, RequestReceived
// included, say which workspace the request was for. It goes between
// WithCluster and the generic chain, whose audit filters take over the
// audit context it starts.
func WithAuditAnnotation(handler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if cluster, ok := logicalcluster.ClusterFromContext(req.Context()); ok && !cluster.IsWildcard() {
			ctx := audit.WithAuditContext(req.Context())
			audit.AddAuditAnnotation(ctx, AuditWorkspaceAnnotation, cluster.String())
			req = req.WithContext(ctx)
		}
		handler.ServeHTTP(w, req)
	})
}
