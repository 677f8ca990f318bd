// Package registrytest helps the tests of the registries: it builds stores
// without a storage backend, for tests that check how a store is assembled
// but never read or write.
package registrytest

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
)

// RESTOptionsGetter hands out options whose decorator builds no storage. It
// records the resources it was asked for.
type RESTOptionsGetter struct {
	Requested []schema.GroupResource
}

// GetRESTOptions returns options for resource with a storage-less decorator.
func (g *RESTOptionsGetter) GetRESTOptions(resource schema.GroupResource, _ runtime.Object) (generic.RESTOptions, error) {
	g.Requested = append(g.Requested, resource)
	return generic.RESTOptions{
		StorageConfig:  &storagebackend.ConfigForResource{GroupResource: resource},
		Decorator:      noStorage,
		ResourcePrefix: resource.Group + "/" + resource.Resource,
	}, nil
}

func noStorage(*storagebackend.ConfigForResource, string, func(runtime.Object) (string, error), func() runtime.Object, func() runtime.Object, storage.AttrFunc, storage.IndexerFuncs, *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
	return nil, func() {}, nil
}
