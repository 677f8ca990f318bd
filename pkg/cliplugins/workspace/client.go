package workspace

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"

	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// HomeWorkspaceName is the name under which root answers the caller's home
// Workspace.
const HomeWorkspaceName = "~"

// scheme knows the kcp types the plugin reads and writes. The plugin keeps
// its own small scheme so that it does not link the server's type registry.
var scheme = runtime.NewScheme()

func init() {
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	if err := tenancyv1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
}

// Client talks to the workspaces of one server, addressed by path.
type Client struct {
	rest *rest.RESTClient
}

// NewClient returns a client for the workspaces under base (a server URL
// without /clusters/), with the credentials and TLS settings of config.
func NewClient(config *rest.Config, base string) (*Client, error) {
	c := rest.CopyConfig(config)
	c.Host = base
	c.APIPath = "/apis"
	c.GroupVersion = &tenancyv1alpha1.SchemeGroupVersion
	c.ContentType = runtime.ContentTypeJSON
	c.AcceptContentTypes = runtime.ContentTypeJSON
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	r, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", base, err)
	}
	return &Client{rest: r}, nil
}

func workspacesPath(p logicalcluster.Path, name string) []string {
	segments := []string{p.RequestPath(), "apis", tenancyv1alpha1.GroupName, tenancyv1alpha1.SchemeGroupVersion.Version, "workspaces"}
	if name != "" {
		segments = append(segments, name)
	}
	return segments
}

// GetWorkspace reads the Workspace name in the workspace at parent.
func (c *Client) GetWorkspace(ctx context.Context, parent logicalcluster.Path, name string) (*tenancyv1alpha1.Workspace, error) {
	ws := &tenancyv1alpha1.Workspace{}
	if err := c.rest.Get().AbsPath(workspacesPath(parent, name)...).Do(ctx).Into(ws); err != nil {
		return nil, err
	}
	return ws, nil
}

// ListWorkspaces lists the Workspaces in the workspace at p.
func (c *Client) ListWorkspaces(ctx context.Context, p logicalcluster.Path) (*tenancyv1alpha1.WorkspaceList, error) {
	list := &tenancyv1alpha1.WorkspaceList{}
	if err := c.rest.Get().AbsPath(workspacesPath(p, "")...).Do(ctx).Into(list); err != nil {
		return nil, err
	}
	return list, nil
}

// CreateWorkspace creates ws in the workspace at parent.
func (c *Client) CreateWorkspace(ctx context.Context, parent logicalcluster.Path, ws *tenancyv1alpha1.Workspace) (*tenancyv1alpha1.Workspace, error) {
	out := &tenancyv1alpha1.Workspace{}
	if err := c.rest.Post().AbsPath(workspacesPath(parent, "")...).Body(ws).Do(ctx).Into(out); err != nil {
		return nil, err
	}
	return out, nil
}

// Reachability is what discovery at a workspace's URL says about it.
type Reachability int

const (
	// Reachable: discovery answered.
	Reachable Reachability = iota
	// Forbidden: the server refused the caller (403).
	Forbidden
	// NotServed: the server does not serve the path (404).
	NotServed
)

// Discover asks the discovery endpoint of the workspace at p (/api, which
// every workspace serves) whether the caller can reach it.
func (c *Client) Discover(ctx context.Context, p logicalcluster.Path) (Reachability, error) {
	err := c.rest.Get().AbsPath(p.RequestPath(), "api").Do(ctx).Error()
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return Reachable, nil
	case apierrors.IsForbidden(err):
		return Forbidden, nil
	case apierrors.IsNotFound(err):
		return NotServed, nil
	case errors.As(err, &status) && status.Status().Code == http.StatusUnauthorized:
		return 0, fmt.Errorf("the server did not accept the credentials of the current context: %w", err)
	}
	return 0, err
}
