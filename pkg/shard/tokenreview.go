package shard

import (
	"context"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/kubernetes/pkg/controlplane/apiserver"
	"k8s.io/kubernetes/pkg/registry/authentication/tokenreview"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// clusterTokenReviews serves the authentication group of upstream with a
// TokenReview that authenticates the token in the logical cluster it is
// posted to, so that the issuers of the workspace's type count (kcp's
// TokenReview in a workspace). Upstream reviews a token in a request of
// its own, without the cluster.
type clusterTokenReviews struct {
	apiserver.RESTStorageProvider
	authenticator authenticator.Request
	audiences     authenticator.Audiences
}

func (p clusterTokenReviews) NewRESTStorage(config serverstorage.APIResourceConfigSource, getter generic.RESTOptionsGetter) (genericapiserver.APIGroupInfo, error) {
	info, err := p.RESTStorageProvider.NewRESTStorage(config, getter)
	if err != nil {
		return info, err
	}
	if storage := info.VersionedResourcesStorageMap[authenticationv1.SchemeGroupVersion.Version]; storage != nil {
		if upstream, ok := storage["tokenreviews"].(*tokenreview.REST); ok {
			storage["tokenreviews"] = &clusterTokenReview{REST: upstream, authenticator: p.authenticator, audiences: p.audiences}
		}
	}
	return info, nil
}

// clusterTokenReview reviews tokens in the request's logical cluster.
type clusterTokenReview struct {
	*tokenreview.REST
	authenticator authenticator.Request
	audiences     authenticator.Audiences
}

var _ rest.Creater = &clusterTokenReview{}

func (r *clusterTokenReview) Create(ctx context.Context, obj runtime.Object, validate rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	cluster, ok := logicalcluster.ClusterFromContext(ctx)
	if !ok {
		return r.REST.Create(ctx, obj, validate, options)
	}
	inCluster := authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
		return r.authenticator.AuthenticateRequest(req.WithContext(logicalcluster.WithCluster(req.Context(), cluster)))
	})
	return tokenreview.NewREST(inCluster, r.audiences).Create(ctx, obj, validate, options)
}
