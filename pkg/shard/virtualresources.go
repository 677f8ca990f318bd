package shard

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/authentication/user"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/shardplane/shardplane/pkg/apiextensions"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	cachev1alpha1 "github.com/shardplane/shardplane/pkg/apis/cache/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/virtual/framework"
	"github.com/shardplane/shardplane/pkg/virtual/replication"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// virtualResourcesUser is who the shard sends a consumer's request for a
// virtual resource to the view as: the consumer was authorized here, as
// kcp's shards proxy these requests with their own credential.
var virtualResourcesUser = &user.DefaultInfo{Name: "system:kcp:virtual-resources", Groups: []string{user.SystemPrivilegedGroup}}

// virtualResources serves the virtual resources APIBindings bind: the
// APIExport's resource names a ClusterCachedResourceEndpointSlice in the
// export's workspace, and the request goes, read-only, to this shard's
// replication view of it below /clusters/<consumer>, as kcp serves them from
// the shard's own virtual workspace URL.
func virtualResources(bindings, localExports, globalExports *wildcardinformer.Informer, views http.Handler) apiextensions.VirtualHandler {
	return func(w http.ResponseWriter, req *http.Request, cluster logicalcluster.Name, br apiextensions.BoundResource) {
		info, _ := apirequest.RequestInfoFrom(req.Context())
		unavailable := func(msg string) {
			framework.Error(w, req, apierrors.NewServiceUnavailable(msg))
		}
		obj, ok, err := bindings.Get(cluster, "", br.Binding)
		b, isBinding := obj.(*apisv1alpha2.APIBinding)
		if err != nil || !ok || !isBinding || b.Spec.Reference.Export == nil {
			unavailable(fmt.Sprintf("APIBinding %s is not available", br.Binding))
			return
		}
		exportCluster := logicalcluster.Name(b.Status.APIExportClusterName)
		obj, ok, err = wildcardinformer.First(exportCluster, "", b.Spec.Reference.Export.Name, localExports, globalExports)
		export, isExport := obj.(*apisv1alpha2.APIExport)
		if err != nil || !ok || !isExport {
			unavailable(fmt.Sprintf("APIExport %s of APIBinding %s is not available", exportCluster.Path().Join(b.Spec.Reference.Export.Name), b.Name))
			return
		}
		slice := ""
		for _, r := range export.Spec.Resources {
			v := r.Storage.Virtual
			if v == nil || r.Group != info.APIGroup || r.Name != info.Resource {
				continue
			}
			if v.Reference.APIGroup != nil && *v.Reference.APIGroup == cachev1alpha1.GroupName && v.Reference.Kind == "ClusterCachedResourceEndpointSlice" {
				slice = v.Reference.Name
			}
		}
		// The name goes into the view's path: nothing but a name.
		if len(validation.IsDNS1123Subdomain(slice)) > 0 {
			slice = ""
		}
		if slice == "" {
			unavailable(fmt.Sprintf("error resolving resource %s.%s; please contact APIExport owner to resolve", info.Resource, info.APIGroup))
			return
		}
		_, below, ok := logicalcluster.SplitRequestPath(req.URL.Path)
		if !ok {
			below = req.URL.Path
		}
		out := req.Clone(apirequest.WithUser(req.Context(), virtualResourcesUser))
		out.URL.Path = replication.Prefix + string(exportCluster) + "/" + slice + cluster.RequestPath() + below
		out.URL.RawPath = ""
		out.RequestURI = out.URL.RequestURI()
		views.ServeHTTP(w, out)
	}
}
