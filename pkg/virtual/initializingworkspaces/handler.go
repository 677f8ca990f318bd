package initializingworkspaces

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// Config configures a view.
type Config struct {
	// ShardConfig reaches the shard the view serves (Host is its base URL)
	// with a privileged (system:masters) credential that the view never
	// exposes: it reads LogicalClusters across the shard, writes their
	// status and impersonates callers.
	ShardConfig *rest.Config
	// Lifecycle is Initializing or Terminating.
	Lifecycle Lifecycle
	// AuthorizationConfig is where the caller's right to the WorkspaceType
	// is checked with SubjectAccessReviews in the type's workspace: a server
	// that reaches every workspace with types (the front-proxy, with a
	// credential allowed to create SubjectAccessReviews). Default:
	// ShardConfig, enough for types on the shard itself.
	AuthorizationConfig *rest.Config
	// Authorize overrides the SubjectAccessReview: it tells whether u may
	// use verb (initialize, terminate) on the WorkspaceType typeName in
	// typeCluster, and why not.
	Authorize func(ctx context.Context, u user.Info, verb string, typeCluster logicalcluster.Path, typeName string) (allowed bool, reason string, err error)
	// GetLogicalCluster overrides how the view reads a cluster's
	// LogicalCluster (an informer of the shard serving in-process);
	// nil when it does not exist. Default: a GET on the shard.
	GetLogicalCluster func(ctx context.Context, cluster logicalcluster.Name) (*corev1alpha1.LogicalCluster, error)
}

// handler serves one lifecycle's views.
type handler struct {
	lifecycle Lifecycle
	shard     *shardClient
	authorize func(ctx context.Context, u user.Info, verb string, typeCluster logicalcluster.Path, typeName string) (bool, string, error)
	getLC     func(ctx context.Context, cluster logicalcluster.Name) (*corev1alpha1.LogicalCluster, error)
	proxy     *contentProxy
}

// New returns the handler of a lifecycle's views. It serves requests with
// the full path /services/<lifecycle>workspaces/<name>/clusters/...,
// whose user (request.UserFrom) was authenticated before.
func New(c Config) (http.Handler, error) {
	if !c.Lifecycle.valid() {
		return nil, fmt.Errorf("lifecycle %q: want %q or %q", c.Lifecycle, Initializing, Terminating)
	}
	if c.ShardConfig == nil || c.ShardConfig.Host == "" {
		return nil, errors.New("the shard's config is required")
	}
	shard, err := newShardClient(c.ShardConfig)
	if err != nil {
		return nil, err
	}
	h := &handler{lifecycle: c.Lifecycle, shard: shard, authorize: c.Authorize, getLC: c.GetLogicalCluster}
	if h.authorize == nil {
		authzConfig := c.AuthorizationConfig
		if authzConfig == nil {
			authzConfig = c.ShardConfig
		}
		sar, err := newAccessReviewer(authzConfig)
		if err != nil {
			return nil, err
		}
		h.authorize = sar.authorize
	}
	if h.getLC == nil {
		h.getLC = shard.getLogicalCluster
	}
	if h.proxy, err = newContentProxy(c.ShardConfig); err != nil {
		return nil, err
	}
	return h, nil
}

// target is what a request addresses.
type target struct {
	// name is the initializer (terminator): <type cluster>:<type name>.
	name        string
	typeCluster logicalcluster.Path
	typeName    string
	// cluster is the logical cluster, or "*".
	cluster logicalcluster.Name
	// rest is the path after /clusters/<cluster>, starting with "/".
	rest string
}

// parse splits /services/<lifecycle>workspaces/<name>/clusters/<cluster>/<rest>.
func (h *handler) parse(urlPath string) (target, error) {
	prefix := h.lifecycle.PathPrefix()
	if !strings.HasPrefix(urlPath, prefix) {
		return target{}, apierrors.NewNotFound(schema.GroupResource{}, urlPath)
	}
	name, after, ok := strings.Cut(strings.TrimPrefix(urlPath, prefix), "/")
	if !ok || !strings.HasPrefix("/"+after, logicalcluster.ClustersPrefix) {
		return target{}, apierrors.NewNotFound(schema.GroupResource{}, urlPath)
	}
	i := strings.LastIndex(name, ":")
	if i <= 0 {
		return target{}, apierrors.NewBadRequest(fmt.Sprintf("%s %q: want <workspace of the type>:<type name>", h.lifecycle.noun(), name))
	}
	typeCluster, typeName := logicalcluster.Path(name[:i]), name[i+1:]
	if typeCluster.IsSystem() {
		return target{}, apierrors.NewForbidden(tenancyv1alpha1.Resource("workspacetypes"), typeName,
			fmt.Errorf("the system's %ss are not served here", h.lifecycle.noun()))
	}
	if _, err := logicalcluster.ParsePath(string(typeCluster)); err != nil || len(validation.IsDNS1123Label(typeName)) > 0 {
		return target{}, apierrors.NewBadRequest(fmt.Sprintf("%s %q: want <workspace of the type>:<type name>", h.lifecycle.noun(), name))
	}
	clusterName, rest, _ := logicalcluster.SplitRequestPath("/" + after)
	cluster, err := logicalcluster.ParseNameOrWildcard(clusterName)
	if err != nil {
		return target{}, apierrors.NewBadRequest(fmt.Sprintf("logical cluster %q: %v", clusterName, err))
	}
	// The path is matched and proxied as cleaned: no spelling of the
	// LogicalCluster's path slips past its checks.
	cleaned := path.Clean(rest)
	if strings.HasSuffix(rest, "/") && cleaned != "/" {
		cleaned += "/"
	}
	return target{name: name, typeCluster: typeCluster, typeName: typeName, cluster: cluster, rest: cleaned}, nil
}

// logicalClustersPath is the LogicalClusters collection below a cluster.
const logicalClustersPath = "/apis/core.kcp.io/v1alpha1/logicalclusters"

var readVerbs = sets.New(http.MethodGet, http.MethodHead)

func (h *handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	ctx := req.Context()
	t, err := h.parse(req.URL.Path)
	if err != nil {
		writeError(w, err)
		return
	}
	u, ok := request.UserFrom(ctx)
	if !ok {
		writeError(w, apierrors.NewUnauthorized("authentication required"))
		return
	}
	allowed, reason, err := h.authorize(ctx, u, h.lifecycle.verb(), t.typeCluster, t.typeName)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Checking access to a workspace view failed", "user", u.GetName(), "view", t.name)
		writeError(w, apierrors.NewServiceUnavailable(fmt.Sprintf("could not check access to %s %s: %v", h.lifecycle.noun(), t.name, err)))
		return
	}
	if !allowed {
		msg := fmt.Sprintf("user %q may not %s workspaces of type %s", u.GetName(), h.lifecycle.verb(), t.name)
		if reason != "" {
			msg += ": " + reason
		}
		writeError(w, apierrors.NewForbidden(tenancyv1alpha1.Resource("workspacetypes"), t.typeName, errors.New(msg)))
		return
	}

	lcRequest, lcName, subresource := splitLogicalClusterPath(t.rest)
	switch {
	case t.cluster.IsWildcard():
		if !lcRequest || lcName != "" {
			writeError(w, apierrors.NewNotFound(schema.GroupResource{}, t.rest))
			return
		}
		if !readVerbs.Has(req.Method) {
			writeError(w, apierrors.NewMethodNotSupported(corev1alpha1.Resource("logicalclusters"), strings.ToLower(req.Method)))
			return
		}
		h.serveCollection(w, req, t)
	case lcRequest:
		h.serveLogicalCluster(w, req, t, lcName, subresource)
	default:
		lc, err := h.getLC(ctx, t.cluster)
		if err != nil {
			writeError(w, apierrors.NewServiceUnavailable(fmt.Sprintf("could not read the LogicalCluster of %s: %v", t.cluster, err)))
			return
		}
		if lc == nil || !h.lifecycle.waitsFor(lc, t.name) {
			writeError(w, apierrors.NewForbidden(corev1alpha1.Resource("logicalclusters"), string(t.cluster),
				fmt.Errorf("workspace %s does not wait for the %s %s", t.cluster, h.lifecycle.noun(), t.name)))
			return
		}
		h.proxy.serve(w, req, u, h.lifecycle.group(t.name), t.cluster.RequestPath()+t.rest)
	}
}

// splitLogicalClusterPath tells whether rest addresses LogicalClusters
// (the collection, "cluster", or its subresource).
func splitLogicalClusterPath(rest string) (isLC bool, name, subresource string) {
	trimmed := strings.TrimSuffix(rest, "/")
	if trimmed == logicalClustersPath {
		return true, "", ""
	}
	after, ok := strings.CutPrefix(trimmed, logicalClustersPath+"/")
	if !ok {
		return false, "", ""
	}
	name, subresource, _ = strings.Cut(after, "/")
	return true, name, subresource
}

// writeError answers with err as a Status; errors that are not API errors
// become 503: they are failures to reach the shard.
func writeError(w http.ResponseWriter, err error) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		status = apierrors.NewServiceUnavailable(err.Error())
	}
	s := status.Status()
	s.Kind, s.APIVersion = "Status", "v1"
	if s.Status == "" {
		s.Status = metav1.StatusFailure
	}
	code := int(s.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(s)
}
