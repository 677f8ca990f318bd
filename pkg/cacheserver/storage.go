package cacheserver

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"

	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	kstorage "github.com/shardplane/shardplane/pkg/storage"
)

// restOptionsGetter gives every replicated kind keys of the form
// <resource prefix>/<shard>/<cluster>/[<namespace>/]<name>, the resource
// prefix being <group or core>/<resource> below the etcd prefix.
type restOptionsGetter struct {
	// delegate stores objects as unstructured JSON.
	delegate   generic.RESTOptionsGetter
	watchCache bool
	// etcd, if set, is the client of the storages without watch cache.
	etcd *kstorage.EtcdClient
}

func (g restOptionsGetter) GetRESTOptions(gr schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	opts, err := g.delegate.GetRESTOptions(gr, example)
	if err != nil {
		return opts, err
	}
	opts.ResourcePrefix = kstorage.ResourcePrefix(gr)
	opts.Decorator = replicaDecorator(g.watchCache, g.etcd)
	// Nothing on the cache server collects garbage: an orphan finalizer
	// would never be removed.
	opts.EnableGarbageCollection = false
	return opts, nil
}

// replicaDecorator returns a generic.StorageDecorator that stores under
// per-shard, per-cluster keys, with or without the watch cache. Without
// it, storages use etcd if given (a cache server embedded in a shard,
// whose storages share the shard's client).
func replicaDecorator(watchCache bool, etcd *kstorage.EtcdClient) generic.StorageDecorator {
	inner := generic.UndecoratedStorage
	switch {
	case watchCache:
		inner = genericregistry.StorageWithCacher()
	case etcd != nil:
		inner = etcd.UndecoratedStorage
	}
	return func(
		config *storagebackend.ConfigForResource,
		resourcePrefix string,
		_ func(obj runtime.Object) (string, error),
		newFunc func() runtime.Object,
		newListFunc func() runtime.Object,
		getAttrsFunc storage.AttrFunc,
		trigger storage.IndexerFuncs,
		indexers *cache.Indexers,
	) (storage.Interface, factory.DestroyFunc, error) {
		// The registry's key function knows neither shard nor cluster; the
		// watch cache keys objects by the annotations every write sets.
		keyFunc := func(obj runtime.Object) (string, error) { return replicaKey(resourcePrefix, obj) }
		s, destroy, err := inner(config, resourcePrefix, keyFunc, newFunc, newListFunc, getAttrsFunc, trigger, indexers)
		if err != nil {
			return nil, nil, err
		}
		return newReplicaStorage(s, resourcePrefix), destroy, nil
	}
}

// replicaKey returns the storage key of a stored replica from its
// kcp.io/shard and kcp.io/cluster annotations.
func replicaKey(prefix string, obj runtime.Object) (string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", err
	}
	a := m.GetAnnotations()
	shard, cluster := a[cacheclient.ShardAnnotationKey], a[logicalcluster.AnnotationKey]
	if shard == "" || cluster == "" {
		return "", fmt.Errorf("replica %s/%s lacks the %s or %s annotation", m.GetNamespace(), m.GetName(), cacheclient.ShardAnnotationKey, logicalcluster.AnnotationKey)
	}
	key := strings.TrimSuffix(prefix, "/") + "/" + shard + "/" + cluster + "/"
	if ns := m.GetNamespace(); ns != "" {
		key += ns + "/"
	}
	return key + m.GetName(), nil
}

// replicaStorage rewrites the keys of a storage.Interface that holds the
// replicas of all shards and clusters: callers address keys without shard
// and cluster, which come from the request context.
type replicaStorage struct {
	storage.Interface
	// prefix is the resource prefix with a leading and no trailing slash,
	// e.g. "/apis.kcp.io/apiexports".
	prefix string
}

func newReplicaStorage(s storage.Interface, prefix string) *replicaStorage {
	return &replicaStorage{Interface: s, prefix: strings.TrimSuffix(prefix, "/")}
}

// origin is the shard and cluster of a request.
type origin struct {
	shard   cacheclient.Shard
	cluster logicalcluster.Name
}

func originFromContext(ctx context.Context) (origin, error) {
	shard, ok := ShardFromContext(ctx)
	if !ok {
		return origin{}, fmt.Errorf("no shard in request context")
	}
	cluster, ok := logicalcluster.ClusterFromContext(ctx)
	if !ok {
		return origin{}, fmt.Errorf("no logical cluster in request context")
	}
	return origin{shard: shard, cluster: cluster}, nil
}

// selection is what a list or watch key covers beyond its key prefix: a
// cluster (when the shard is the wildcard but the cluster is not) and a
// namespace.
type selection struct {
	cluster   logicalcluster.Name
	namespace string
}

func (s selection) empty() bool { return s.cluster == "" && s.namespace == "" }

// matches tells whether a stored replica is selected.
func (s selection) matches(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	if s.namespace != "" && m.GetNamespace() != s.namespace {
		return false
	}
	return s.cluster == "" || m.GetAnnotations()[logicalcluster.AnnotationKey] == string(s.cluster)
}

// rest returns what follows the resource prefix in key.
func (s *replicaStorage) rest(key string) (string, error) {
	if !strings.HasPrefix(key, s.prefix) || (len(key) > len(s.prefix) && key[len(s.prefix)] != '/') {
		return "", fmt.Errorf("key %q lacks resource prefix %q", key, s.prefix)
	}
	return strings.Trim(key[len(s.prefix):], "/"), nil
}

// objectKey is the key of one object of the request's shard and cluster.
// Wildcards are refused (the HTTP layer answers 405 before this).
func (s *replicaStorage) objectKey(ctx context.Context, key string) (string, origin, error) {
	o, err := originFromContext(ctx)
	if err != nil {
		return "", o, err
	}
	if o.shard.IsWildcard() || o.cluster.IsWildcard() {
		return "", o, fmt.Errorf("all shards or all clusters (*) support only list and watch")
	}
	rest, err := s.rest(key)
	if err != nil {
		return "", o, err
	}
	k := s.prefix + "/" + string(o.shard) + "/" + string(o.cluster)
	if rest != "" {
		k += "/" + rest
	}
	return k, o, nil
}

// listKey is the key a list or watch reads below, and what it selects
// among the objects there. A request for one object ("<ns>/<name>" or
// "<name>", not recursive) across a wildcard becomes a recursive one whose
// field selector still picks the name.
func (s *replicaStorage) listKey(ctx context.Context, key string, opts *storage.ListOptions) (string, selection, error) {
	o, err := originFromContext(ctx)
	if err != nil {
		return "", selection{}, err
	}
	rest, err := s.rest(key)
	if err != nil {
		return "", selection{}, err
	}
	var sel selection
	k := s.prefix
	switch {
	case !o.shard.IsWildcard() && !o.cluster.IsWildcard():
		k += "/" + string(o.shard) + "/" + string(o.cluster)
		if rest != "" {
			k += "/" + rest
		}
		return k, sel, nil
	case o.shard.IsWildcard():
		if !o.cluster.IsWildcard() {
			sel.cluster = o.cluster
		}
	default:
		k += "/" + string(o.shard)
	}
	if rest != "" {
		if opts.Recursive {
			sel.namespace = rest
		} else {
			opts.Recursive = true
			if i := strings.IndexByte(rest, '/'); i >= 0 {
				sel.namespace = rest[:i]
			}
		}
	}
	return k, sel, nil
}

// setOrigin records shard and cluster in obj's annotations, overwriting
// whatever a writer sent, so that a replica can never claim another origin.
//
// It also drops managed fields: a replica is written by one shard's
// replication and never applied to, and the field manager's entries were
// two fifths of a stored replica.
func setOrigin(obj runtime.Object, o origin) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	a := m.GetAnnotations()
	if a[cacheclient.ShardAnnotationKey] == string(o.shard) && a[logicalcluster.AnnotationKey] == string(o.cluster) {
		return nil
	}
	if a == nil {
		a = make(map[string]string, 2)
	}
	a[cacheclient.ShardAnnotationKey] = string(o.shard)
	a[logicalcluster.AnnotationKey] = string(o.cluster)
	m.SetAnnotations(a)
	return nil
}

func (s *replicaStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	k, o, err := s.objectKey(ctx, key)
	if err != nil {
		return err
	}
	if err := setOrigin(obj, o); err != nil {
		return err
	}
	return s.Interface.Create(ctx, k, obj, out, ttl)
}

func (s *replicaStorage) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc, cachedExistingObject runtime.Object, opts storage.DeleteOptions) error {
	k, _, err := s.objectKey(ctx, key)
	if err != nil {
		return err
	}
	return s.Interface.Delete(ctx, k, out, preconditions, validateDeletion, cachedExistingObject, opts)
}

func (s *replicaStorage) Get(ctx context.Context, key string, opts storage.GetOptions, objPtr runtime.Object) error {
	k, _, err := s.objectKey(ctx, key)
	if err != nil {
		return err
	}
	return s.Interface.Get(ctx, k, opts, objPtr)
}

func (s *replicaStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	k, o, err := s.objectKey(ctx, key)
	if err != nil {
		return err
	}
	update := func(input runtime.Object, res storage.ResponseMeta) (runtime.Object, *uint64, error) {
		out, ttl, err := tryUpdate(input, res)
		if err != nil {
			return out, ttl, err
		}
		if err := setOrigin(out, o); err != nil {
			return nil, nil, err
		}
		return out, ttl, nil
	}
	return s.Interface.GuaranteedUpdate(ctx, k, destination, ignoreNotFound, preconditions, update, cachedExistingObject)
}

// fromTheFuture refuses a resource version newer than what the storage
// holds. A cache server whose etcd was wiped starts again at revision 1,
// and etcd would hold a watch from a shard's old revision open, silently,
// until the new revisions caught up: the shard would never learn that its
// replicas are gone. Refused, the shard's informer lists afresh.
func (s *replicaStorage) fromTheFuture(ctx context.Context, resourceVersion string) error {
	if resourceVersion == "" || resourceVersion == "0" {
		return nil
	}
	rv, err := strconv.ParseUint(resourceVersion, 10, 64)
	if err != nil {
		return nil // the storage below refuses it with its own message
	}
	current, err := s.Interface.GetCurrentResourceVersion(ctx)
	if err != nil || rv <= current {
		return err
	}
	return storage.NewTooLargeResourceVersionError(rv, current, 0)
}

func (s *replicaStorage) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	k, sel, err := s.listKey(ctx, key, &opts)
	if err != nil {
		return err
	}
	if err := s.fromTheFuture(ctx, opts.ResourceVersion); err != nil {
		return err
	}
	if err := s.Interface.GetList(ctx, k, opts, listObj); err != nil || sel.empty() {
		return err
	}
	items, err := meta.ExtractList(listObj)
	if err != nil {
		return err
	}
	kept := items[:0]
	for _, item := range items {
		if sel.matches(item) {
			kept = append(kept, item)
		}
	}
	return meta.SetList(listObj, kept)
}

func (s *replicaStorage) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	k, sel, err := s.listKey(ctx, key, &opts)
	if err != nil {
		return nil, err
	}
	if err := s.fromTheFuture(ctx, opts.ResourceVersion); err != nil {
		// A watch that cannot start where the client was is expired: the
		// client lists again.
		return nil, apierrors.NewResourceExpired(fmt.Sprintf("resource version %s is newer than the cache server's storage (%v): it was replaced; list again", opts.ResourceVersion, err))
	}
	w, err := s.Interface.Watch(ctx, k, opts)
	if err != nil || sel.empty() {
		return w, err
	}
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		if e.Type == watch.Bookmark || e.Type == watch.Error {
			return e, true
		}
		return e, sel.matches(e.Object)
	}), nil
}
