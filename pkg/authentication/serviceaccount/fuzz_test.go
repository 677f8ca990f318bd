package serviceaccount

import (
	"context"
	"encoding/base64"
	"testing"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/scope"
)

// tokenAuthenticatorFunc adapts a function to authenticator.Token.
type tokenAuthenticatorFunc func(ctx context.Context, token string) (*authenticator.Response, bool, error)

func (f tokenAuthenticatorFunc) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	return f(ctx, token)
}

// FuzzClusterAuthenticator checks that the unverified cluster claim of a
// token never panics the authenticator and that only a valid logical
// cluster name, never the wildcard, reaches the delegate and the user.
func FuzzClusterAuthenticator(f *testing.F) {
	enc := base64.RawURLEncoding.EncodeToString
	header := enc([]byte(`{"alg":"RS256","kid":"k"}`))
	for _, payload := range []string{
		`{"iss":"kubernetes/serviceaccount","kcp.io/cluster":"root"}`,
		`{"kcp.io/cluster":"2x7n4rj9q1k0abcd","sub":"system:serviceaccount:default:a"}`,
		`{"kcp.io/cluster":"*"}`, `{"kcp.io/cluster":"root:org"}`, `{"kcp.io/cluster":"system:admin"}`,
		`{"kcp.io/cluster":""}`, `{"kcp.io/cluster":1}`, `{"kcp.io/cluster":"root","kcp.io/cluster":"*"}`,
		`{"kcp.io/cluster":"r\u006fot"}`, `{"kcp.io/cluster":"ROOT"}`, `[]`, `null`, `{`,
	} {
		f.Add(header + "." + enc([]byte(payload)) + ".sig")
	}
	f.Add("")
	f.Add("..")
	f.Add("a.b")
	f.Add(header + ".!!!.sig")
	f.Add(header + "." + base64.StdEncoding.EncodeToString([]byte(`{"kcp.io/cluster":"root"}`)) + ".sig")
	f.Fuzz(func(t *testing.T, token string) {
		var reached logicalcluster.Name
		a := &ClusterAuthenticator{Delegate: tokenAuthenticatorFunc(func(ctx context.Context, _ string) (*authenticator.Response, bool, error) {
			reached, _ = logicalcluster.ClusterFromContext(ctx)
			return &authenticator.Response{User: &user.DefaultInfo{Name: "system:serviceaccount:default:a"}}, true, nil
		})}
		resp, ok, err := a.AuthenticateToken(context.Background(), token)
		cluster, hasClaim := TokenCluster(token)
		if hasClaim && cluster == "" {
			t.Fatalf("TokenCluster(%q) found an empty cluster", token)
		}
		if !ok {
			if reached != "" && err == nil {
				t.Fatalf("%q reached the delegate in %q but was not authenticated", token, reached)
			}
			return
		}
		if err != nil || resp == nil {
			t.Fatalf("%q authenticated with error %v, response %v", token, err, resp)
		}
		if reached != cluster || reached.IsWildcard() || logicalcluster.ValidateName(string(reached)) != nil {
			t.Fatalf("%q reached the delegate in cluster %q, claim %q", token, reached, cluster)
		}
		if got, _ := scope.ServiceAccountCluster(resp.User); got != reached {
			t.Fatalf("%q authenticated a user of cluster %q, want %q", token, got, reached)
		}
	})
}
