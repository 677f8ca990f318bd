package home

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/workspacetypes"
)

// TypeReference is the WorkspaceType of every home: root:home.
var TypeReference = tenancyv1alpha1.WorkspaceTypeReference{Name: tenancyv1alpha1.HomeWorkspaceTypeName, Path: string(logicalcluster.Root)}

// retryAfterSeconds is how long a client waits before asking again for a
// home that is not Ready yet (client-go retries 429s by itself).
const retryAfterSeconds = 1

var workspacesResource = tenancyv1alpha1.Resource("workspaces")

// Config is what the handler needs of the shard. The functions keep it
// testable without a server.
type Config struct {
	// CreatorGroups are the groups whose members get a home created
	// (--home-workspaces-home-creator-groups).
	CreatorGroups []string
	// Authorizer decides whether a user may create a home: verb create on
	// the Workspace "~" in root (ClusterRole
	// system:kcp:home-clusterworkspace-create).
	Authorizer authorizer.Authorizer
	// Serializer encodes the answers.
	Serializer runtime.NegotiatedSerializer
	// Cached returns the LogicalCluster of a cluster hosted on this shard as
	// the shard's informer knows it, nil when it does not.
	Cached func(logicalcluster.Name) *corev1alpha1.LogicalCluster
	// Get reads the LogicalCluster of a cluster live (the informer may not
	// have seen one created a moment ago).
	Get func(context.Context, logicalcluster.Name) (*corev1alpha1.LogicalCluster, error)
	// Create creates the LogicalCluster of a new cluster.
	Create func(context.Context, logicalcluster.Name, *corev1alpha1.LogicalCluster) (*corev1alpha1.LogicalCluster, error)
	// Lifecycle returns the initializers and terminators of a new logical
	// cluster of type root:home.
	Lifecycle func() ([]corev1alpha1.LogicalClusterInitializer, []corev1alpha1.LogicalClusterTerminator, error)
	// ExternalURL is the base of the URL of a home whose LogicalCluster
	// has no status.URL yet.
	ExternalURL string
}

// WithHomeWorkspaces answers GET /clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/~
// with the caller's home Workspace and passes every other request on. It
// runs after authorization: RBAC in root lets authenticated users get the
// Workspace "~" (system:kcp:home-clusterworkspace-create); creating a home
// is decided here.
func WithHomeWorkspaces(handler http.Handler, cfg Config) http.Handler {
	h := &homeHandler{Config: cfg}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !isGetHome(req.Context()) {
			handler.ServeHTTP(w, req)
			return
		}
		h.serve(w, req)
	})
}

// isGetHome tells whether a request is a GET of the Workspace "~" in root.
func isGetHome(ctx context.Context) bool {
	cluster, _ := logicalcluster.ClusterFromContext(ctx)
	info, ok := genericapirequest.RequestInfoFrom(ctx)
	return ok && cluster == logicalcluster.Root && info.IsResourceRequest && info.Verb == "get" &&
		info.APIGroup == tenancyv1alpha1.SchemeGroupVersion.Group && info.Resource == "workspaces" &&
		info.Subresource == "" && info.Name == WorkspaceName
}

type homeHandler struct {
	Config
}

func (h *homeHandler) serve(w http.ResponseWriter, req *http.Request) {
	ctx := req.Context()
	gv := tenancyv1alpha1.SchemeGroupVersion
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok || u.GetName() == "" || u.GetName() == user.Anonymous {
		responsewriters.ErrorNegotiated(apierrors.NewForbidden(workspacesResource, WorkspaceName,
			fmt.Errorf("anonymous users have no home workspace: authenticate first")), h.Serializer, gv, w, req)
		return
	}
	lc, err := h.logicalCluster(ctx, u)
	if err != nil {
		responsewriters.ErrorNegotiated(err, h.Serializer, gv, w, req)
		return
	}
	if lc.Status.Phase != corev1alpha1.LogicalClusterPhaseReady {
		phase := lc.Status.Phase
		if phase == "" {
			phase = corev1alpha1.LogicalClusterPhaseScheduling
		}
		responsewriters.ErrorNegotiated(apierrors.NewTooManyRequests(
			fmt.Sprintf("your home workspace is being created (phase %s); retry in a moment", phase), retryAfterSeconds), h.Serializer, gv, w, req)
		return
	}
	responsewriters.WriteObjectNegotiated(h.Serializer, negotiation.DefaultEndpointRestrictions, gv, w, req, http.StatusOK, h.workspace(ClusterName(u.GetName()), lc), false)
}

// logicalCluster returns the LogicalCluster of the user's home, creating it
// when the user has none and may have one. Errors are API errors.
func (h *homeHandler) logicalCluster(ctx context.Context, u user.Info) (*corev1alpha1.LogicalCluster, error) {
	cluster := ClusterName(u.GetName())
	if lc := h.Cached(cluster); lc != nil {
		return lc, nil
	}
	lc, err := h.Get(ctx, cluster)
	if err == nil {
		return lc, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, unavailable(fmt.Errorf("read home workspace %s: %w", cluster, err))
	}
	if err := h.mayCreate(ctx, u); err != nil {
		return nil, err
	}
	lc, err = h.newLogicalCluster(u)
	if err != nil {
		return nil, unavailable(err)
	}
	created, err := h.Create(ctx, cluster, lc)
	if apierrors.IsAlreadyExists(err) {
		// A concurrent request of the same user won.
		created, err = h.Get(ctx, cluster)
	}
	if err != nil {
		return nil, unavailable(fmt.Errorf("create home workspace %s: %w", cluster, err))
	}
	klog.FromContext(ctx).Info("Created home workspace", "user", u.GetName(), "cluster", cluster, "path", Path(u.GetName()))
	return created, nil
}

// mayCreate lets members of the creator groups whom the authorizer allows
// to create the Workspace "~" in root have a home.
func (h *homeHandler) mayCreate(ctx context.Context, u user.Info) error {
	if !slices.ContainsFunc(u.GetGroups(), func(g string) bool { return slices.Contains(h.CreatorGroups, g) }) {
		return apierrors.NewForbidden(workspacesResource, WorkspaceName,
			fmt.Errorf("user %q has no home workspace and is in none of the groups whose members get one", u.GetName()))
	}
	attrs := authorizer.AttributesRecord{
		User: u, Verb: "create", APIGroup: tenancyv1alpha1.SchemeGroupVersion.Group, APIVersion: tenancyv1alpha1.SchemeGroupVersion.Version,
		Resource: "workspaces", Name: WorkspaceName, ResourceRequest: true,
	}
	decision, reason, err := h.Authorizer.Authorize(ctx, attrs)
	if err != nil || decision != authorizer.DecisionAllow {
		if reason == "" {
			reason = "no RBAC rule allows it"
		}
		return apierrors.NewForbidden(workspacesResource, WorkspaceName,
			fmt.Errorf("user %q may not create a home workspace (verb create on workspaces %q in root): %s", u.GetName(), WorkspaceName, reason))
	}
	return nil
}

// newLogicalCluster is the LogicalCluster of a new home: no owning
// Workspace, path user:<name>, type root:home, the user its owner (the
// logical cluster controller binds the owner to cluster-admin).
func (h *homeHandler) newLogicalCluster(u user.Info) (*corev1alpha1.LogicalCluster, error) {
	owner, err := corev1alpha1.OwnerAnnotation(u.GetName(), u.GetUID(), u.GetGroups())
	if err != nil {
		return nil, fmt.Errorf("encode owner of home workspace: %w", err)
	}
	initializers, terminators, err := h.Lifecycle()
	if err != nil {
		return nil, fmt.Errorf("type %s of home workspaces: %w", TypeReference.String(), err)
	}
	return &corev1alpha1.LogicalCluster{
		TypeMeta: metav1.TypeMeta{APIVersion: corev1alpha1.SchemeGroupVersion.String(), Kind: "LogicalCluster"},
		ObjectMeta: metav1.ObjectMeta{
			Name: corev1alpha1.LogicalClusterName,
			Annotations: map[string]string{
				logicalcluster.PathAnnotationKey:                     string(Path(u.GetName())),
				corev1alpha1.LogicalClusterTypeAnnotationKey:         workspacetypes.TypeAnnotation(TypeReference),
				corev1alpha1.ExperimentalWorkspaceOwnerAnnotationKey: owner,
			},
		},
		Spec: corev1alpha1.LogicalClusterSpec{Initializers: initializers, Terminators: terminators},
	}, nil
}

// workspace is the Workspace that stands for a home, as kcp answers it:
// named after the LogicalCluster, spec.cluster and spec.URL leading there.
func (h *homeHandler) workspace(cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) *tenancyv1alpha1.Workspace {
	url := lc.Status.URL
	if url == "" {
		p := logicalcluster.Path(lc.Annotations[logicalcluster.PathAnnotationKey])
		if p == "" {
			p = cluster.Path()
		}
		url = p.URL(h.ExternalURL)
	}
	typ := TypeReference
	return &tenancyv1alpha1.Workspace{
		TypeMeta: metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "Workspace"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              lc.Name,
			CreationTimestamp: lc.CreationTimestamp,
			Annotations:       map[string]string{logicalcluster.PathAnnotationKey: lc.Annotations[logicalcluster.PathAnnotationKey]},
		},
		Spec: tenancyv1alpha1.WorkspaceSpec{Type: &typ, Cluster: string(cluster), URL: url},
		Status: tenancyv1alpha1.WorkspaceStatus{
			Phase:        lc.Status.Phase,
			Conditions:   lc.Status.Conditions,
			Initializers: lc.Status.Initializers,
		},
	}
}

// unavailable turns a failure of the shard into 503 with a message, not a
// 500: the client may retry.
func unavailable(err error) error {
	return apierrors.NewServiceUnavailable(err.Error())
}

// Lifecycle returns the initializers and terminators of a new home: those
// of root:home and the types it extends, and system:apibindings when any of
// them has default APIBindings; the same rule the workspace scheduler
// applies to a new workspace (pkg/controllers/workspace lifecycleOf).
func Lifecycle(types workspacetypes.Resolver) ([]corev1alpha1.LogicalClusterInitializer, []corev1alpha1.LogicalClusterTerminator, error) {
	wt, ref, err := types.Resolve(TypeReference, logicalcluster.Root.Path())
	if err != nil {
		return nil, nil, err
	}
	all, _, err := types.ExtendedTypes(wt, ref)
	if err != nil {
		return nil, nil, err
	}
	initializers, terminators := workspacetypes.Lifecycle(all)
	return initializers, terminators, nil
}
