package frontproxy

import (
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"

	"github.com/shardplane/shardplane/pkg/features"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func TestOnlyWorkspaceIssuedUsersPassAWorkspaceReview(t *testing.T) {
	scoped := map[string]authenticationv1.ExtraValue{"authentication.kcp.io/scopes": {"cluster:team"}}
	for name, tc := range map[string]struct {
		u    authenticationv1.UserInfo
		want bool
	}{
		"issuer user":           {authenticationv1.UserInfo{Username: "oidc:a", Groups: []string{"system:authenticated", "oidc:dev"}, Extra: scoped}, true},
		"unscoped (admin)":      {authenticationv1.UserInfo{Username: "kcp-admin", Groups: []string{"system:kcp:admin", "system:authenticated"}}, false},
		"other workspace scope": {authenticationv1.UserInfo{Username: "oidc:a", Extra: map[string]authenticationv1.ExtraValue{"authentication.kcp.io/scopes": {"cluster:other"}}}, false},
		"system group":          {authenticationv1.UserInfo{Username: "oidc:a", Groups: []string{"system:masters"}, Extra: scoped}, false},
		"system user":           {authenticationv1.UserInfo{Username: "system:admin", Extra: scoped}, false},
	} {
		if got := workspaceIssued(tc.u, "team"); got != tc.want {
			t.Errorf("%s: workspaceIssued = %v, want %v", name, got, tc.want)
		}
	}
}

func TestViewPathsNameTheWorkspaceOfTheirFirstClustersSegment(t *testing.T) {
	for _, tc := range []struct {
		route, path string
		want        logicalcluster.Path
		ok          bool
	}{
		{"/services/", "/services/apiexport/exportcluster/widgets/clusters/consumer/apis/example.io/v1/widgets", "consumer", true},
		{"/services/", "/services/apiresourceschema/consumer/clusters/root:org:team/apis/apis.kcp.io/v1alpha1/apiresourceschemas", "root:org:team", true},
		{"/shards/beta/", "/shards/beta/services/initializingworkspaces/root:org:init/clusters/teamcluster", "teamcluster", true},
		// the route's own prefix is not searched: a shard may be named clusters
		{"/shards/clusters/", "/shards/clusters/services/apiexport/x/y/clusters/consumer/api", "consumer", true},
		{"/services/", "/services/apiexport/exportcluster/widgets/clusters/*/apis/example.io/v1/widgets", "", false},
		{"/services/", "/services/apiresourceschema/consumer/apis/apis.kcp.io/v1alpha1/apiresourceschemas", "", false},
		{"/services/", "/services/apiexport/x/y/clusters/Not_A_Path/api", "", false},
		{"/services/", "/services/apiexport/x/y/clusters/", "", false},
	} {
		got, ok := viewWorkspace(tc.route, tc.path)
		if got != tc.want || ok != tc.ok {
			t.Errorf("viewWorkspace(%q, %q) = %q, %v; want %q, %v", tc.route, tc.path, got, ok, tc.want, tc.ok)
		}
	}
}

func TestWorkspaceReviewsFollowTheWorkspaceAuthenticationGate(t *testing.T) {
	set := func(on bool) {
		if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(features.WorkspaceAuthentication): on}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { set(false) })
	for _, on := range []bool{false, true} {
		set(on)
		if got := newProxy(nil, NewIndex(nil), nil, nil).workspaceReviews != nil; got != on {
			t.Errorf("gate %v: workspace reviews %v", on, got)
		}
	}
}
