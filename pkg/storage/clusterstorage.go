// Package storage puts the logical cluster into every etcd key and wires the
// watch cache so that it stays correct per cluster.
//
// Keys are <resource prefix>/<cluster>/[<namespace>/]<name>. The registries
// of k8s.io/kubernetes compute keys without a cluster; a storage.Interface
// wrapper inserts the cluster from the request context right after the
// resource prefix. The watch cache sits below that wrapper and keys objects
// by their kcp.io/cluster annotation, which the wrapper sets on every write.
package storage

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/storage"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// clusterStorage rewrites keys of an underlying storage.Interface that
// holds all logical clusters.
type clusterStorage struct {
	storage.Interface
	// prefix is the resource prefix with a leading and no trailing slash,
	// e.g. "/core/configmaps".
	prefix string
}

// NewClusterStorage wraps s, whose keys start with prefix, so that callers
// address keys without the cluster and the cluster comes from the context.
func NewClusterStorage(s storage.Interface, prefix string) storage.Interface {
	return &clusterStorage{Interface: s, prefix: strings.TrimSuffix(prefix, "/")}
}

// ObjectKey returns the storage key of an object from its kcp.io/cluster
// annotation; the watch cache uses it.
func ObjectKey(prefix string, obj runtime.Object) (string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", err
	}
	cluster, ok := logicalcluster.ObjectCluster(m.GetAnnotations())
	if !ok {
		return "", fmt.Errorf("object %s/%s has no %s annotation", m.GetNamespace(), m.GetName(), logicalcluster.AnnotationKey)
	}
	prefix = strings.TrimSuffix(prefix, "/")
	if ns := m.GetNamespace(); ns != "" {
		return prefix + "/" + string(cluster) + "/" + ns + "/" + m.GetName(), nil
	}
	return prefix + "/" + string(cluster) + "/" + m.GetName(), nil
}

// rewrite inserts the cluster of ctx into key. For the wildcard it returns the
// bare resource prefix and the rest of the key (a namespace) to filter by.
func (s *clusterStorage) rewrite(ctx context.Context, key string) (newKey, namespaceFilter string, err error) {
	cluster, ok := logicalcluster.ClusterFromContext(ctx)
	if !ok {
		return "", "", fmt.Errorf("no logical cluster in request context for key %q", key)
	}
	if !strings.HasPrefix(key, s.prefix) || (len(key) > len(s.prefix) && key[len(s.prefix)] != '/') {
		return "", "", fmt.Errorf("key %q lacks resource prefix %q", key, s.prefix)
	}
	rest := strings.TrimPrefix(key[len(s.prefix):], "/")
	if cluster.IsWildcard() {
		return s.prefix, strings.TrimSuffix(rest, "/"), nil
	}
	if rest == "" {
		return s.prefix + "/" + string(cluster), "", nil
	}
	return s.prefix + "/" + string(cluster) + "/" + rest, "", nil
}

// rewriteSingle is rewrite for verbs that address one object: the wildcard
// is refused (the HTTP layer answers 405 before this is reached).
func (s *clusterStorage) rewriteSingle(ctx context.Context, key string) (string, logicalcluster.Name, error) {
	cluster, ok := logicalcluster.ClusterFromContext(ctx)
	if ok && cluster.IsWildcard() {
		return "", "", fmt.Errorf("the wildcard cluster supports only list and watch")
	}
	k, _, err := s.rewrite(ctx, key)
	return k, cluster, err
}

// setCluster records the cluster in obj's annotations, overwriting whatever a
// client sent, so that an object can never claim another cluster.
func setCluster(obj runtime.Object, cluster logicalcluster.Name) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	a := m.GetAnnotations()
	if a[logicalcluster.AnnotationKey] == string(cluster) {
		return nil
	}
	if a == nil {
		a = make(map[string]string, 1)
	}
	a[logicalcluster.AnnotationKey] = string(cluster)
	m.SetAnnotations(a)
	return nil
}

func (s *clusterStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	k, cluster, err := s.rewriteSingle(ctx, key)
	if err != nil {
		return err
	}
	if err := setCluster(obj, cluster); err != nil {
		return err
	}
	return retryable(s.Interface.Create(ctx, k, obj, out, ttl))
}

func (s *clusterStorage) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc, cachedExistingObject runtime.Object, opts storage.DeleteOptions) error {
	k, _, err := s.rewriteSingle(ctx, key)
	if err != nil {
		return err
	}
	return retryable(s.Interface.Delete(ctx, k, out, preconditions, validateDeletion, cachedExistingObject, opts))
}

// wildcardScope turns what rewrite left of a wildcard key into a namespace
// filter, and makes the request span the whole prefix: a single-object
// request ("<ns>/<name>" or "<name>", not recursive) becomes a recursive one
// whose field selector still picks the name.
func wildcardScope(rest string, opts *storage.ListOptions) string {
	if rest == "" {
		return ""
	}
	if opts.Recursive {
		return rest
	}
	opts.Recursive = true
	if i := strings.Index(rest, "/"); i >= 0 {
		return rest[:i]
	}
	return ""
}

func (s *clusterStorage) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	k, ns, err := s.rewrite(ctx, key)
	if err != nil {
		return nil, err
	}
	ns = wildcardScope(ns, &opts)
	w, err := s.Interface.Watch(ctx, k, opts)
	if err != nil || ns == "" {
		return w, err
	}
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		if e.Type == watch.Bookmark || e.Type == watch.Error {
			return e, true
		}
		m, err := meta.Accessor(e.Object)
		return e, err == nil && m.GetNamespace() == ns
	}), nil
}

func (s *clusterStorage) Get(ctx context.Context, key string, opts storage.GetOptions, objPtr runtime.Object) error {
	k, _, err := s.rewriteSingle(ctx, key)
	if err != nil {
		return err
	}
	return retryable(s.Interface.Get(ctx, k, opts, objPtr))
}

func (s *clusterStorage) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	k, ns, err := s.rewrite(ctx, key)
	if err != nil {
		return err
	}
	ns = wildcardScope(ns, &opts)
	if err := s.Interface.GetList(ctx, k, opts, listObj); err != nil {
		return retryable(err)
	}
	observeListSize(ctx, listObj)
	if ns == "" {
		return nil
	}
	return filterListByNamespace(listObj, ns)
}

// observeListSize records the objects a tenant's LIST of one logical
// cluster read (before the namespace filter: they were all read).
func observeListSize(ctx context.Context, listObj runtime.Object) {
	cluster, ok := logicalcluster.ClusterFromContext(ctx)
	info, hasInfo := request.RequestInfoFrom(ctx)
	if !ok || cluster.IsWildcard() || !hasInfo || info.Verb != "list" {
		return
	}
	Lists.Observe(cluster, schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}, int64(meta.LenList(listObj)))
}

func filterListByNamespace(listObj runtime.Object, ns string) error {
	items, err := meta.ExtractList(listObj)
	if err != nil {
		return err
	}
	kept := items[:0]
	for _, item := range items {
		if m, err := meta.Accessor(item); err == nil && m.GetNamespace() == ns {
			kept = append(kept, item)
		}
	}
	return meta.SetList(listObj, kept)
}

func (s *clusterStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	k, cluster, err := s.rewriteSingle(ctx, key)
	if err != nil {
		return err
	}
	update := func(input runtime.Object, res storage.ResponseMeta) (runtime.Object, *uint64, error) {
		out, ttl, err := tryUpdate(input, res)
		if err != nil {
			return out, ttl, err
		}
		if err := setCluster(out, cluster); err != nil {
			return nil, nil, err
		}
		return out, ttl, nil
	}
	return retryable(s.Interface.GuaranteedUpdate(ctx, k, destination, ignoreNotFound, preconditions, update, cachedExistingObject))
}
