package cacheserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/clusterpath"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

type shardKey struct{}

// WithShard returns a copy of ctx that carries the shard of a request.
func WithShard(ctx context.Context, s cacheclient.Shard) context.Context {
	return context.WithValue(ctx, shardKey{}, s)
}

// ShardFromContext returns the shard a request addresses, and false when
// the context carries none.
func ShardFromContext(ctx context.Context) (cacheclient.Shard, bool) {
	s, ok := ctx.Value(shardKey{}).(cacheclient.Shard)
	return s, ok && s != ""
}

// scope is what a request path addresses: a shard and a logical cluster
// (either may be the wildcard) and the path below them.
type scope struct {
	shard   cacheclient.Shard
	cluster logicalcluster.Name
	rest    string
	// prefix is what was taken off the path.
	prefix string
}

// isProcessPath tells whether p is a process-wide endpoint, served without
// a shard and a cluster: health, metrics and profiles. It is not
// clusterpath.IsShardLevelPath: it lists what is served unscoped, health too.
func isProcessPath(p string) bool {
	for _, root := range []string{"/healthz", "/livez", "/readyz", "/metrics", debugPath} {
		if p == root || strings.HasPrefix(p, root+"/") {
			return true
		}
	}
	return false
}

// parsePath splits a request path into its shard, cluster and the rest.
// /services/cache may be left off. ok is false (with a nil error) for the
// process-wide paths, which have no scope.
func parsePath(p string) (s scope, ok bool, err error) {
	trimmed := p
	if trimmed == cacheclient.ServicePrefix || strings.HasPrefix(trimmed, cacheclient.ServicePrefix+"/") {
		trimmed = strings.TrimPrefix(trimmed, cacheclient.ServicePrefix)
		if trimmed == "" {
			trimmed = "/"
		}
	}
	if isProcessPath(trimmed) {
		return scope{}, false, nil
	}
	if !strings.HasPrefix(trimmed, cacheclient.ShardsPrefix) {
		return scope{}, false, apierrors.NewBadRequest(fmt.Sprintf("path %q addresses no shard: the cache server serves %s/shards/<shard or *>/clusters/<cluster or *>/...", p, cacheclient.ServicePrefix))
	}
	after := strings.TrimPrefix(trimmed, cacheclient.ShardsPrefix)
	i := strings.IndexByte(after, '/')
	if i < 0 {
		return scope{}, false, apierrors.NewBadRequest(fmt.Sprintf("path %q addresses no logical cluster: the cache server serves %s/shards/<shard or *>/clusters/<cluster or *>/...", p, cacheclient.ServicePrefix))
	}
	shard, below := after[:i], after[i:]
	if err := cacheclient.ValidateShard(shard); err != nil {
		return scope{}, false, apierrors.NewBadRequest(err.Error())
	}
	if !strings.HasPrefix(below, logicalcluster.ClustersPrefix) {
		return scope{}, false, apierrors.NewBadRequest(fmt.Sprintf("path %q addresses no logical cluster: the cache server serves %s/shards/<shard or *>/clusters/<cluster or *>/...", p, cacheclient.ServicePrefix))
	}
	segment, rest, _ := logicalcluster.SplitRequestPath(below)
	prefix := p
	if below != logicalcluster.RequestPath(segment) {
		prefix = p[:len(p)-len(rest)]
	}
	cluster, err := logicalcluster.ParseNameOrWildcard(segment)
	if err != nil {
		return scope{}, false, apierrors.NewBadRequest(fmt.Sprintf("%v (the cache server addresses logical clusters by name, never by workspace path)", err))
	}
	for _, seg := range strings.Split(rest, "/") {
		if seg == ".." || seg == "." {
			return scope{}, false, apierrors.NewBadRequest(fmt.Sprintf("path %q must not contain %q segments", p, seg))
		}
	}
	return scope{shard: cacheclient.Shard(shard), cluster: cluster, rest: rest, prefix: prefix}, true, nil
}

// withScope takes /services/cache/shards/<shard>/clusters/<cluster> off
// the request path and puts shard and cluster into the request context. It
// runs before the generic filters, so that request info, authorization and
// storage all see the path below the scope. Health and metrics are served
// without a scope; anything else without one is a bad request.
func withScope(handler http.Handler, s runtime.NegotiatedSerializer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		sc, ok, err := parsePath(req.URL.Path)
		if err != nil {
			responsewriters.ErrorNegotiated(err, s, schema.GroupVersion{}, w, req)
			return
		}
		// An escaped character in the scope would let two spellings address
		// one shard; names never need one.
		if ok && req.URL.RawPath != "" && !strings.HasPrefix(req.URL.RawPath, sc.prefix) {
			responsewriters.ErrorNegotiated(apierrors.NewBadRequest(fmt.Sprintf("shard and logical cluster in %q must not contain encoded characters", req.URL.RawPath)), s, schema.GroupVersion{}, w, req)
			return
		}
		if !ok {
			if strings.HasPrefix(req.URL.Path, cacheclient.ServicePrefix+"/") {
				req = req.Clone(req.Context())
				stripPrefix(req, cacheclient.ServicePrefix)
			}
			handler.ServeHTTP(w, req)
			return
		}
		if clusterpath.IsShardLevelPath(sc.rest) {
			responsewriters.ErrorNegotiated(&apierrors.StatusError{ErrStatus: metav1.Status{
				Status: metav1.StatusFailure, Code: http.StatusNotImplemented, Reason: "NotImplemented",
				Message: fmt.Sprintf("%s is a process-wide endpoint, not available at shard or cluster scope: request it without %s/shards/<shard>/clusters/<cluster>", sc.rest, cacheclient.ServicePrefix),
			}}, s, schema.GroupVersion{}, w, req)
			return
		}
		ctx := logicalcluster.WithCluster(WithShard(req.Context(), sc.shard), sc.cluster)
		req = req.Clone(ctx)
		stripPrefix(req, sc.prefix)
		handler.ServeHTTP(w, req)
	})
}

// stripPrefix takes prefix off the path, the raw path and the request URI.
func stripPrefix(req *http.Request, prefix string) {
	req.URL.Path = strings.TrimPrefix(req.URL.Path, prefix)
	if req.URL.Path == "" {
		req.URL.Path = "/"
	}
	if req.URL.RawPath != "" {
		req.URL.RawPath = strings.TrimPrefix(req.URL.RawPath, prefix)
	}
	req.RequestURI = strings.TrimPrefix(req.RequestURI, prefix)
	if req.RequestURI == "" || req.RequestURI[0] == '?' {
		req.RequestURI = "/" + req.RequestURI
	}
}

// withWildcardVerbs answers 405 to anything but list and watch for all
// shards or all clusters. It runs after request info is known.
func withWildcardVerbs(handler http.Handler, s runtime.NegotiatedSerializer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		shard, _ := ShardFromContext(req.Context())
		cluster, _ := logicalcluster.ClusterFromContext(req.Context())
		if shard.IsWildcard() || cluster.IsWildcard() {
			if info, ok := genericapirequest.RequestInfoFrom(req.Context()); ok && info.IsResourceRequest && !logicalcluster.WildcardAllows(info.Verb) {
				err := apierrors.NewMethodNotSupported(schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}, info.Verb)
				err.ErrStatus.Message = fmt.Sprintf("%s across all shards or all logical clusters (*) is not supported: only list and watch are; name the shard and the cluster of the replica", info.Verb)
				responsewriters.ErrorNegotiated(err, s, schema.GroupVersion{}, w, req)
				return
			}
		}
		handler.ServeHTTP(w, req)
	})
}
