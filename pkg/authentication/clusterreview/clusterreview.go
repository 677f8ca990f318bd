// Package clusterreview asks a server for a TokenReview in one logical
// cluster: the shard that hosts it (or a front-proxy that routes there)
// authenticates the token with that cluster's service accounts and its
// type's issuers. The front-proxy and the virtual-workspaces server
// delegate authentication of the tokens only a shard knows this way.
package clusterreview

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// Review posts a TokenReview of token in cluster to the server client
// reaches (an authentication.k8s.io/v1 REST client at the server's base
// URL) and returns the review's status.
func Review(ctx context.Context, client rest.Interface, cluster logicalcluster.Name, token string) (*authenticationv1.TokenReviewStatus, error) {
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}
	review.APIVersion, review.Kind = authenticationv1.SchemeGroupVersion.String(), "TokenReview"
	out := &authenticationv1.TokenReview{}
	if err := client.Post().AbsPath(cluster.RequestPath(), "apis/authentication.k8s.io/v1/tokenreviews").Body(review).Do(ctx).Into(out); err != nil {
		return nil, err
	}
	return &out.Status, nil
}

// User is the user of a review's answer.
func User(u authenticationv1.UserInfo) user.Info {
	extra := make(map[string][]string, len(u.Extra))
	for k, v := range u.Extra {
		extra[k] = v
	}
	return &user.DefaultInfo{Name: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra}
}
