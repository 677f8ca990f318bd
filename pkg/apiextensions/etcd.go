package apiextensions

import (
	"sync"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/kubernetes"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
	cacherstorage "k8s.io/apiserver/pkg/storage/cacher"
	"k8s.io/apiserver/pkg/storage/etcd3"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	"k8s.io/client-go/tools/cache"
)

// sharedEtcd gives the storages of all custom resources one etcd client.
// The upstream storage factory opens a client (a gRPC connection with its
// buffers and goroutines) per storage, which would make every served CRD of
// every logical cluster cost a connection.
type sharedEtcd struct {
	once      sync.Once
	client    *kubernetes.Client
	compactor etcd3.Compactor
	stop      func()
	err       error
}

// close stops the compactor and closes the client at server shutdown.
func (e *sharedEtcd) close() {
	if e.stop != nil {
		e.stop()
	}
	if e.client != nil {
		_ = e.client.Close()
	}
}

func (e *sharedEtcd) get(c *storagebackend.ConfigForResource) (*kubernetes.Client, etcd3.Compactor, error) {
	e.once.Do(func() {
		tlsConfig, err := transport.TLSInfo{
			CertFile: c.Transport.CertFile, KeyFile: c.Transport.KeyFile, TrustedCAFile: c.Transport.TrustedCAFile,
		}.ClientConfig()
		if err != nil {
			e.err = err
			return
		}
		if c.Transport.CertFile == "" && c.Transport.KeyFile == "" && c.Transport.TrustedCAFile == "" {
			tlsConfig = nil
		}
		e.client, e.err = kubernetes.New(clientv3.Config{
			DialTimeout:          20 * time.Second,
			DialKeepAliveTime:    30 * time.Second,
			DialKeepAliveTimeout: 10 * time.Second,
			Endpoints:            c.Transport.ServerList,
			TLS:                  tlsConfig,
		})
		if e.err == nil && c.CompactionInterval > 0 {
			compactor := etcd3.StartCompactorPerEndpoint(e.client.Client, c.CompactionInterval)
			e.compactor, e.stop = compactor, compactor.Stop
		}
	})
	return e.client, e.compactor, e.err
}

// rawStorage is generic.UndecoratedStorage on the shared client.
func (e *sharedEtcd) rawStorage(c *storagebackend.ConfigForResource, newFunc, newListFunc func() runtime.Object, resourcePrefix string) (storage.Interface, factory.DestroyFunc, error) {
	client, compactor, err := e.get(c)
	if err != nil {
		return nil, nil, err
	}
	transformer := c.Transformer
	if transformer == nil {
		transformer = identity.NewEncryptCheckTransformer()
	}
	versioner := storage.APIObjectVersioner{}
	s, err := etcd3.New(client, compactor, c.Codec, newFunc, newListFunc, c.Prefix, resourcePrefix, c.GroupResource,
		transformer, c.LeaseManagerConfig, etcd3.NewDefaultDecoder(c.Codec, versioner), versioner)
	if err != nil {
		return nil, nil, err
	}
	var once sync.Once
	return s, func() { once.Do(s.Close) }, nil
}

// cachedStorage is genericregistry.StorageWithCacher on the shared client.
func (e *sharedEtcd) cachedStorage(c *storagebackend.ConfigForResource, resourcePrefix string, keyFunc func(runtime.Object) (string, error),
	newFunc, newListFunc func() runtime.Object, getAttrs storage.AttrFunc, triggers storage.IndexerFuncs, indexers *cache.Indexers,
) (storage.Interface, factory.DestroyFunc, error) {
	s, destroy, err := e.rawStorage(c, newFunc, newListFunc, resourcePrefix)
	if err != nil {
		return nil, nil, err
	}
	cacher, err := cacherstorage.NewCacherFromConfig(cacherstorage.Config{
		Storage:             s,
		Versioner:           storage.APIObjectVersioner{},
		GroupResource:       c.GroupResource,
		EventsHistoryWindow: c.EventsHistoryWindow,
		ResourcePrefix:      resourcePrefix,
		KeyFunc:             keyFunc,
		NewFunc:             newFunc,
		NewListFunc:         newListFunc,
		GetAttrsFunc:        getAttrs,
		IndexerFuncs:        triggers,
		Indexers:            indexers,
		Codec:               c.Codec,
	})
	if err != nil {
		destroy()
		return nil, nil, err
	}
	delegator := cacherstorage.NewCacheDelegator(cacher, s)
	var once sync.Once
	return delegator, func() {
		once.Do(func() {
			delegator.Stop()
			cacher.Stop()
			destroy()
		})
	}, nil
}
