// Package apis serves apis.kcp.io: APIResourceSchemas and
// APIExportEndpointSlices in v1alpha1, APIExports and APIBindings in
// v1alpha2 (stored) and v1alpha1, converted on the fly.
package apis

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/registry/apis/apibinding"
	"github.com/shardplane/shardplane/pkg/registry/apis/apiexport"
	"github.com/shardplane/shardplane/pkg/registry/apis/apiexportendpointslice"
	"github.com/shardplane/shardplane/pkg/registry/apis/apiresourceschema"
)

// RESTStorageProvider serves apis.kcp.io. The group's types must be
// installed in legacyscheme.Scheme.
type RESTStorageProvider struct{}

// GroupName returns apis.kcp.io.
func (RESTStorageProvider) GroupName() string { return apisv1alpha1.GroupName }

// StorageVersions are the versions the resources are stored in; a shard's
// storage factory must encode them so (the group prefers v1alpha2, which
// lacks the v1alpha1-only kinds).
var StorageVersions = map[schema.GroupResource]schema.GroupVersion{
	apisv1alpha1.Resource("apiresourceschemas"):      apisv1alpha1.SchemeGroupVersion,
	apisv1alpha1.Resource("apiexportendpointslices"): apisv1alpha1.SchemeGroupVersion,
	apisv1alpha1.Resource("apiexports"):              apisv1alpha2.SchemeGroupVersion,
	apisv1alpha1.Resource("apibindings"):             apisv1alpha2.SchemeGroupVersion,
}

// NewRESTStorage builds the storage of the enabled apis.kcp.io resources.
// APIExports and APIBindings share one storage between both versions.
func (RESTStorageProvider) NewRESTStorage(apiResourceConfigSource serverstorage.APIResourceConfigSource, g generic.RESTOptionsGetter) (genericapiserver.APIGroupInfo, error) {
	apiGroupInfo := genericapiserver.NewDefaultAPIGroupInfo(apisv1alpha1.GroupName, legacyscheme.Scheme, legacyscheme.ParameterCodec, legacyscheme.Codecs)
	scheme := legacyscheme.Scheme
	v1alpha1, v1alpha2 := map[string]rest.Storage{}, map[string]rest.Storage{}
	enabled := func(resource string) (v1, v2 bool) {
		return apiResourceConfigSource.ResourceEnabled(apisv1alpha1.SchemeGroupVersion.WithResource(resource)),
			apiResourceConfigSource.ResourceEnabled(apisv1alpha2.SchemeGroupVersion.WithResource(resource))
	}
	wrap := func(resource string, err error) error {
		return fmt.Errorf("storage of %s: %w", apisv1alpha1.Resource(resource), err)
	}

	if v1, _ := enabled("apiresourceschemas"); v1 {
		s, err := apiresourceschema.NewREST(scheme, g)
		if err != nil {
			return genericapiserver.APIGroupInfo{}, wrap("apiresourceschemas", err)
		}
		v1alpha1["apiresourceschemas"] = s
	}
	if v1, _ := enabled("apiexportendpointslices"); v1 {
		s, statusREST, err := apiexportendpointslice.NewREST(scheme, g)
		if err != nil {
			return genericapiserver.APIGroupInfo{}, wrap("apiexportendpointslices", err)
		}
		v1alpha1["apiexportendpointslices"], v1alpha1["apiexportendpointslices/status"] = s, statusREST
	}
	if v1, v2 := enabled("apiexports"); v1 || v2 {
		s, statusREST, err := apiexport.NewREST(scheme, g)
		if err != nil {
			return genericapiserver.APIGroupInfo{}, wrap("apiexports", err)
		}
		for _, m := range pick(v1, v2, v1alpha1, v1alpha2) {
			m["apiexports"], m["apiexports/status"] = s, statusREST
		}
	}
	if v1, v2 := enabled("apibindings"); v1 || v2 {
		s, statusREST, err := apibinding.NewREST(scheme, g)
		if err != nil {
			return genericapiserver.APIGroupInfo{}, wrap("apibindings", err)
		}
		for _, m := range pick(v1, v2, v1alpha1, v1alpha2) {
			m["apibindings"], m["apibindings/status"] = s, statusREST
		}
	}
	if len(v1alpha1) > 0 {
		apiGroupInfo.VersionedResourcesStorageMap[apisv1alpha1.SchemeGroupVersion.Version] = v1alpha1
	}
	if len(v1alpha2) > 0 {
		apiGroupInfo.VersionedResourcesStorageMap[apisv1alpha2.SchemeGroupVersion.Version] = v1alpha2
	}
	return apiGroupInfo, nil
}

func pick(v1, v2 bool, m1, m2 map[string]rest.Storage) []map[string]rest.Storage {
	var out []map[string]rest.Storage
	if v1 {
		out = append(out, m1)
	}
	if v2 {
		out = append(out, m2)
	}
	return out
}
