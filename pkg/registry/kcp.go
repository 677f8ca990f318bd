// Package registry serves kcp's own API groups, core.kcp.io,
// tenancy.kcp.io, topology.kcp.io and migration.kcp.io, from the shard's
// generic control plane.
package registry

import (
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	cachev1alpha1 "github.com/shardplane/shardplane/pkg/apis/cache/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	topologyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/topology/v1alpha1"
	clustercachedresourceregistry "github.com/shardplane/shardplane/pkg/registry/cache/clustercachedresource"
	clustercachedresourceendpointsliceregistry "github.com/shardplane/shardplane/pkg/registry/cache/clustercachedresourceendpointslice"
	logicalclusterregistry "github.com/shardplane/shardplane/pkg/registry/core/logicalcluster"
	shardregistry "github.com/shardplane/shardplane/pkg/registry/core/shard"
	logicalclusterdumpregistry "github.com/shardplane/shardplane/pkg/registry/migration/logicalclusterdump"
	logicalclustermigrationregistry "github.com/shardplane/shardplane/pkg/registry/migration/logicalclustermigration"
	"github.com/shardplane/shardplane/pkg/registry/status"
	workspaceregistry "github.com/shardplane/shardplane/pkg/registry/tenancy/workspace"
	workspaceauthenticationconfigurationregistry "github.com/shardplane/shardplane/pkg/registry/tenancy/workspaceauthenticationconfiguration"
	workspacetyperegistry "github.com/shardplane/shardplane/pkg/registry/tenancy/workspacetype"
	partitionregistry "github.com/shardplane/shardplane/pkg/registry/topology/partition"
	partitionsetregistry "github.com/shardplane/shardplane/pkg/registry/topology/partitionset"
)

// CoreRESTStorageProvider serves core.kcp.io: logicalclusters and shards,
// each with its status subresource. The group's types must be installed in
// legacyscheme.Scheme.
type CoreRESTStorageProvider struct{}

// GroupName returns core.kcp.io.
func (CoreRESTStorageProvider) GroupName() string { return corev1alpha1.GroupName }

// NewRESTStorage builds the storage of the enabled core.kcp.io resources.
func (CoreRESTStorageProvider) NewRESTStorage(apiResourceConfigSource serverstorage.APIResourceConfigSource, restOptionsGetter generic.RESTOptionsGetter) (genericapiserver.APIGroupInfo, error) {
	return newAPIGroupInfo(corev1alpha1.SchemeGroupVersion, apiResourceConfigSource, restOptionsGetter, map[string]newRESTFunc{
		"logicalclusters": func(g generic.RESTOptionsGetter) (rest.Storage, *status.REST, error) {
			return logicalclusterregistry.NewREST(legacyscheme.Scheme, g)
		},
		"shards": func(g generic.RESTOptionsGetter) (rest.Storage, *status.REST, error) {
			return shardregistry.NewREST(legacyscheme.Scheme, g)
		},
	})
}

// TenancyRESTStorageProvider serves tenancy.kcp.io: workspaces and
// workspacetypes, each with its status subresource, and
// workspaceauthenticationconfigurations. The group's types must
// be installed in legacyscheme.Scheme.
type TenancyRESTStorageProvider struct{}

// GroupName returns tenancy.kcp.io.
func (TenancyRESTStorageProvider) GroupName() string { return tenancyv1alpha1.GroupName }

// NewRESTStorage builds the storage of the enabled tenancy.kcp.io resources.
func (TenancyRESTStorageProvider) NewRESTStorage(apiResourceConfigSource serverstorage.APIResourceConfigSource, restOptionsGetter generic.RESTOptionsGetter) (genericapiserver.APIGroupInfo, error) {
	return newAPIGroupInfo(tenancyv1alpha1.SchemeGroupVersion, apiResourceConfigSource, restOptionsGetter, map[string]newRESTFunc{
		"workspaces": func(g generic.RESTOptionsGetter) (rest.Storage, *status.REST, error) {
			return workspaceregistry.NewREST(legacyscheme.Scheme, g)
		},
		"workspacetypes": func(g generic.RESTOptionsGetter) (rest.Storage, *status.REST, error) {
			return workspacetyperegistry.NewREST(legacyscheme.Scheme, g)
		},
		"workspaceauthenticationconfigurations": func(g generic.RESTOptionsGetter) (rest.Storage, *status.REST, error) {
			main, err := workspaceauthenticationconfigurationregistry.NewREST(legacyscheme.Scheme, g)
			return main, nil, err
		},
	})
}

// TopologyRESTStorageProvider serves topology.kcp.io: partitions and
// partitionsets with their status subresource. The group's types must be
// installed in legacyscheme.Scheme.
type TopologyRESTStorageProvider struct{}

// GroupName returns topology.kcp.io.
func (TopologyRESTStorageProvider) GroupName() string { return topologyv1alpha1.GroupName }

// NewRESTStorage builds the storage of the enabled topology.kcp.io
// resources.
func (TopologyRESTStorageProvider) NewRESTStorage(apiResourceConfigSource serverstorage.APIResourceConfigSource, restOptionsGetter generic.RESTOptionsGetter) (genericapiserver.APIGroupInfo, error) {
	return newAPIGroupInfo(topologyv1alpha1.SchemeGroupVersion, apiResourceConfigSource, restOptionsGetter, map[string]newRESTFunc{
		"partitions": func(g generic.RESTOptionsGetter) (rest.Storage, *status.REST, error) {
			main, err := partitionregistry.NewREST(legacyscheme.Scheme, g)
			return main, nil, err
		},
		"partitionsets": func(g generic.RESTOptionsGetter) (rest.Storage, *status.REST, error) {
			return partitionsetregistry.NewREST(legacyscheme.Scheme, g)
		},
	})
}

// CacheRESTStorageProvider serves cache.kcp.io: clustercachedresources
// and clustercachedresourceendpointslices with their status subresource,
// in every workspace, with kcp's CacheAPIs gate only. The group's types
// must be installed in legacyscheme.Scheme.
type CacheRESTStorageProvider struct{}

// GroupName returns cache.kcp.io.
func (CacheRESTStorageProvider) GroupName() string { return cachev1alpha1.GroupName }

// NewRESTStorage builds the storage of the enabled cache.kcp.io resources.
func (CacheRESTStorageProvider) NewRESTStorage(apiResourceConfigSource serverstorage.APIResourceConfigSource, restOptionsGetter generic.RESTOptionsGetter) (genericapiserver.APIGroupInfo, error) {
	return newAPIGroupInfo(cachev1alpha1.SchemeGroupVersion, apiResourceConfigSource, restOptionsGetter, map[string]newRESTFunc{
		"clustercachedresources": func(g generic.RESTOptionsGetter) (rest.Storage, *status.REST, error) {
			return clustercachedresourceregistry.NewREST(legacyscheme.Scheme, g)
		},
		"clustercachedresourceendpointslices": func(g generic.RESTOptionsGetter) (rest.Storage, *status.REST, error) {
			return clustercachedresourceendpointsliceregistry.NewREST(legacyscheme.Scheme, g)
		},
	})
}

// MigrationRESTStorageProvider serves migration.kcp.io:
// logicalclustermigrations with their status subresource, and the
// create-only logicalclusterdumps. The group's types
// must be installed in legacyscheme.Scheme. Outside root the kind exists
// only where root's migration.kcp.io export is bound, as in kcp
// (apiextensions.WithLimitedKinds).
type MigrationRESTStorageProvider struct {
	// EtcdKV is the shard's etcd, which LogicalClusterDumps read (nil:
	// none, and dumps answer 503); EtcdPrefix is its etcd prefix.
	EtcdKV     func() clientv3.KV
	EtcdPrefix string
}

// GroupName returns migration.kcp.io.
func (MigrationRESTStorageProvider) GroupName() string { return migrationv1alpha1.GroupName }

// NewRESTStorage builds the storage of the enabled migration.kcp.io resources.
func (p MigrationRESTStorageProvider) NewRESTStorage(apiResourceConfigSource serverstorage.APIResourceConfigSource, restOptionsGetter generic.RESTOptionsGetter) (genericapiserver.APIGroupInfo, error) {
	return newAPIGroupInfo(migrationv1alpha1.SchemeGroupVersion, apiResourceConfigSource, restOptionsGetter, map[string]newRESTFunc{
		"logicalclustermigrations": func(g generic.RESTOptionsGetter) (rest.Storage, *status.REST, error) {
			return logicalclustermigrationregistry.NewREST(legacyscheme.Scheme, g)
		},
		"logicalclusterdumps": func(generic.RESTOptionsGetter) (rest.Storage, *status.REST, error) {
			return logicalclusterdumpregistry.NewREST(p.EtcdKV, p.EtcdPrefix), nil, nil
		},
	})
}

// newRESTFunc builds the storage of a resource and of its status
// subresource, nil for a kind without status.
type newRESTFunc func(generic.RESTOptionsGetter) (rest.Storage, *status.REST, error)

// newAPIGroupInfo serves the resources of gv that the resource config
// enables, each with a status subresource.
func newAPIGroupInfo(gv schema.GroupVersion, apiResourceConfigSource serverstorage.APIResourceConfigSource, restOptionsGetter generic.RESTOptionsGetter, resources map[string]newRESTFunc) (genericapiserver.APIGroupInfo, error) {
	apiGroupInfo := genericapiserver.NewDefaultAPIGroupInfo(gv.Group, legacyscheme.Scheme, legacyscheme.ParameterCodec, legacyscheme.Codecs)
	storage := map[string]rest.Storage{}
	for resource, newREST := range resources {
		if !apiResourceConfigSource.ResourceEnabled(gv.WithResource(resource)) {
			continue
		}
		main, statusREST, err := newREST(restOptionsGetter)
		if err != nil {
			return genericapiserver.APIGroupInfo{}, fmt.Errorf("storage of %s: %w", gv.WithResource(resource).GroupResource(), err)
		}
		storage[resource] = main
		if statusREST != nil {
			storage[resource+"/status"] = statusREST
		}
	}
	if len(storage) > 0 {
		apiGroupInfo.VersionedResourcesStorageMap[gv.Version] = storage
	}
	return apiGroupInfo, nil
}
