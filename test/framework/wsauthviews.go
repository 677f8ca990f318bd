package framework

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/virtual/viewurl"
)

// RequireViewsAcceptWorkspaceTokensOnlyThroughTheFrontProxy checks the
// apiresourceschema view of workspace (on shard), whose type's issuers
// know token, and of other, whose type's issuers do not. kcp's front-proxy
// resolves the workspace a view's path names (its first
// /clusters/<workspace>) and authenticates the tokens of that workspace's
// issuers for the view, which gets the identity in request headers: the
// view answers the token's user as it answers kcp-admin (the user needs
// "get" on apibindings in workspace; 404 while the workspace binds
// nothing). kcp's views themselves, asked directly, do not know such
// tokens (their authenticator is the shard's global one, or delegated
// TokenReviews outside any workspace) and answer 401. It returns the
// status code of the view's answer through the front-proxy.
func RequireViewsAcceptWorkspaceTokensOnlyThroughTheFrontProxy(ctx context.Context, t *testing.T, s *System, token, shard, workspace, other string) int {
	t.Helper()
	schemas := func(consumer, cluster string) string {
		return viewurl.URL("", viewurl.APIResourceSchemaView, consumer) + logicalcluster.Path(cluster).RequestPath() + "/apis/apis.kcp.io/v1alpha1/apiresourceschemas"
	}
	withToken := func(cfg *rest.Config) rest.Interface {
		cfg = rest.AnonymousClientConfig(cfg)
		cfg.BearerToken = token
		return KubeClient(t, cfg).CoreV1().RESTClient()
	}
	status := func(ctx context.Context, c rest.Interface, path string) (int, error) {
		code := 0
		err := c.Get().AbsPath(path).Do(ctx).StatusCode(&code).Error()
		return code, err
	}
	proxy := withToken(s.AdminConfig(t, ""))
	admin := KubeClient(t, s.AdminConfig(t, "")).CoreV1().RESTClient()
	viaProxy := viewurl.ShardsPrefix + shard
	path := viaProxy + schemas(workspace, workspace)
	code := 0
	Eventually(t, func(ctx context.Context) error {
		var err error
		if code, err = status(ctx, proxy, path); code == 0 || code == http.StatusUnauthorized || code == http.StatusForbidden {
			return fmt.Errorf("%d: %v", code, err)
		}
		adminCode, adminErr := status(ctx, admin, path)
		if code != adminCode {
			return fmt.Errorf("the token's answer %d (%v) is not kcp-admin's %d (%v)", code, err, adminCode, adminErr)
		}
		return nil
	}, "the view of %s through the front-proxy with a token of its type's issuer", workspace)

	for what, path := range map[string]string{
		"a workspace whose type names no configuration": viaProxy + schemas(workspace, other),
		"every workspace": viaProxy + schemas(workspace, "*"),
	} {
		if err := proxy.Get().AbsPath(path).Do(ctx).Error(); !apierrors.IsUnauthorized(err) {
			t.Errorf("view naming %s through the front-proxy: %v, want 401", what, err)
		}
	}
	err := withToken(s.ViewsConfig(t, shard)).Get().AbsPath(schemas(workspace, workspace)).Do(ctx).Error()
	if !apierrors.IsUnauthorized(err) {
		t.Errorf("the view of %s on its own server, not through the front-proxy: %v, want 401", workspace, err)
	}
	return code
}
