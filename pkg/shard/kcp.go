package shard

import (
	"context"
	"reflect"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	cachev1alpha1 "github.com/shardplane/shardplane/pkg/apis/cache/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	_ "github.com/shardplane/shardplane/pkg/apis/install" // kcp's groups in legacyscheme
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	topologyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/topology/v1alpha1"
	"github.com/shardplane/shardplane/pkg/features"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/loopback"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// byPath indexes LogicalClusters by their kcp.io/path annotation.
const byPath = "path"

func pathIndex(obj interface{}) ([]string, error) {
	lc, ok := obj.(*corev1alpha1.LogicalCluster)
	if !ok {
		return nil, nil
	}
	if p := lc.Annotations[logicalcluster.PathAnnotationKey]; p != "" {
		return []string{p}, nil
	}
	return nil, nil
}

// kcpInformers span all logical clusters of the shard. They read the REST
// storages of kcp's kinds in-process: kcp's kinds have no protobuf, and a
// loopback watch encoded and decoded every object and event as JSON. Their
// objects share maps and slices with the watch caches (see
// wildcardinformer.InProcess): readers copy before they change one.
type kcpInformers struct {
	logicalClusters *wildcardinformer.Informer
	workspaces      *wildcardinformer.Informer
	workspaceTypes  *wildcardinformer.Informer
	shards          *wildcardinformer.Informer
	apiExports      *wildcardinformer.Informer
	// apiBindings and apiResourceSchemas feed the APIBinding controller.
	apiBindings        *wildcardinformer.Informer
	apiResourceSchemas *wildcardinformer.Informer
	// apiExportEndpointSlices are replicated to the cache server.
	apiExportEndpointSlices *wildcardinformer.Informer
	// workspaceAuthenticationConfigurations feed per-workspace
	// authentication.
	workspaceAuthenticationConfigurations *wildcardinformer.Informer
	// partitionSets and partitions feed the PartitionSet controller.
	partitionSets *wildcardinformer.Informer
	partitions    *wildcardinformer.Informer
	// logicalClusterMigrations are replicated to the cache server, where
	// the shards a move concerns read them.
	logicalClusterMigrations *wildcardinformer.Informer
	// clusterCachedResources and their endpoint slices feed the cached
	// resources controller; nil without kcp's CacheAPIs gate.
	clusterCachedResources              *wildcardinformer.Informer
	clusterCachedResourceEndpointSlices *wildcardinformer.Informer
}

func (i kcpInformers) all() []*wildcardinformer.Informer {
	all := []*wildcardinformer.Informer{i.logicalClusters, i.workspaces, i.workspaceTypes, i.shards, i.apiExports, i.apiBindings, i.apiResourceSchemas, i.apiExportEndpointSlices, i.workspaceAuthenticationConfigurations, i.partitionSets, i.partitions, i.logicalClusterMigrations}
	if i.clusterCachedResources != nil {
		all = append(all, i.clusterCachedResources, i.clusterCachedResourceEndpointSlices)
	}
	return all
}

func newKCPInformers(storage *inProcessStorage) (kcpInformers, error) {
	i := kcpInformers{
		logicalClusters:                       storage.informer(kcpclient.LogicalClusters, &corev1alpha1.LogicalCluster{}),
		workspaces:                            storage.informer(kcpclient.Workspaces, &tenancyv1alpha1.Workspace{}),
		workspaceTypes:                        storage.informer(kcpclient.WorkspaceTypes, &tenancyv1alpha1.WorkspaceType{}),
		shards:                                storage.informer(kcpclient.Shards, &corev1alpha1.Shard{}),
		apiExports:                            storage.informer(apisv1alpha2.SchemeGroupVersion.WithResource("apiexports"), &apisv1alpha2.APIExport{}),
		apiBindings:                           storage.informer(apisv1alpha2.SchemeGroupVersion.WithResource("apibindings"), &apisv1alpha2.APIBinding{}),
		apiResourceSchemas:                    storage.informer(apisv1alpha1.SchemeGroupVersion.WithResource("apiresourceschemas"), &apisv1alpha1.APIResourceSchema{}),
		apiExportEndpointSlices:               storage.informer(apisv1alpha1.SchemeGroupVersion.WithResource("apiexportendpointslices"), &apisv1alpha1.APIExportEndpointSlice{}),
		workspaceAuthenticationConfigurations: storage.informer(kcpclient.WorkspaceAuthenticationConfigurations, &tenancyv1alpha1.WorkspaceAuthenticationConfiguration{}),
		partitionSets:                         storage.informer(kcpclient.PartitionSets, &topologyv1alpha1.PartitionSet{}),
		partitions:                            storage.informer(kcpclient.Partitions, &topologyv1alpha1.Partition{}),
		logicalClusterMigrations:              storage.informer(kcpclient.LogicalClusterMigrations, &migrationv1alpha1.LogicalClusterMigration{}),
	}
	if features.Enabled(features.CacheAPIs) {
		i.clusterCachedResources = storage.informer(kcpclient.ClusterCachedResources, &cachev1alpha1.ClusterCachedResource{})
		i.clusterCachedResourceEndpointSlices = storage.informer(kcpclient.ClusterCachedResourceEndpointSlices, &cachev1alpha1.ClusterCachedResourceEndpointSlice{})
	}
	if err := i.logicalClusters.AddIndexers(cache.Indexers{byPath: pathIndex}); err != nil {
		return kcpInformers{}, err
	}
	return i, nil
}

// inProcessStorage finds the REST storages of the shard's resources for
// the informers that list and watch them in-process. The informers are made
// with the configuration, the storages with the server.
type inProcessStorage struct {
	of atomic.Pointer[func(schema.GroupVersionResource) rest.Storage]
}

// install makes the informers read the storages of(gvr).
func (s *inProcessStorage) install(of func(schema.GroupVersionResource) rest.Storage) {
	s.of.Store(&of)
}

// informer lists and watches gvr of all logical clusters in-process, as the
// shard. Its storage holds gvr's versioned type (kcp's kinds).
func (s *inProcessStorage) informer(gvr schema.GroupVersionResource, example runtime.Object) *wildcardinformer.Informer {
	return wildcardinformer.New(wildcardinformer.InProcess(gvr, s.find(gvr), s.caller(gvr)), example, "wildcard-"+gvr.Resource)
}

// internal lists and watches the objects of gvr of all logical clusters
// that match selector in-process, as the shard. Its storage holds the
// internal type of a Kubernetes kind, which the list/watch converts to
// gvr's version (example's type) by legacyscheme.
func (s *inProcessStorage) internal(gvr schema.GroupVersionResource, example runtime.Object, selector fields.Selector) cache.ListerWatcher {
	// Kubernetes' types are named as their kinds.
	kind := gvr.GroupVersion().WithKind(reflect.TypeOf(example).Elem().Name())
	all := wildcardinformer.InProcessInternal(gvr, kind, legacyscheme.Scheme, s.find(gvr), s.caller(gvr))
	return wildcardinformer.Selected(all, selector)
}

// core lists and watches a core resource in-process (internal).
func (s *inProcessStorage) core(resource string, example runtime.Object, selector fields.Selector) cache.ListerWatcher {
	return s.internal(corev1.SchemeGroupVersion.WithResource(resource), example, selector)
}

func (s *inProcessStorage) find(gvr schema.GroupVersionResource) func() wildcardinformer.Storage {
	return func() wildcardinformer.Storage {
		of := s.of.Load()
		if of == nil {
			return nil
		}
		st, _ := (*of)(gvr).(wildcardinformer.Storage)
		return st
	}
}

func (s *inProcessStorage) caller(gvr schema.GroupVersionResource) func(context.Context, string) context.Context {
	return func(ctx context.Context, verb string) context.Context {
		return loopback.WithRequest(ctx, logicalcluster.Wildcard, verb, gvr, "", "", loopback.ShardUser)
	}
}

// logicalCluster returns the LogicalCluster of a cluster hosted here, or nil.
func (i kcpInformers) logicalCluster(cluster logicalcluster.Name) *corev1alpha1.LogicalCluster {
	obj, exists, err := i.logicalClusters.Get(cluster, "", corev1alpha1.LogicalClusterName)
	if err != nil || !exists {
		return nil
	}
	return obj.(*corev1alpha1.LogicalCluster)
}

// deleting tells whether a hosted logical cluster is being deleted.
func (i kcpInformers) deleting(cluster logicalcluster.Name) bool {
	lc := i.logicalCluster(cluster)
	return lc != nil && lc.DeletionTimestamp != nil
}

// workspaceType returns a WorkspaceType of a hosted cluster, or nil.
func (i kcpInformers) workspaceType(cluster logicalcluster.Name, name string) *tenancyv1alpha1.WorkspaceType {
	obj, exists, err := i.workspaceTypes.Get(cluster, "", name)
	if err != nil || !exists {
		return nil
	}
	return obj.(*tenancyv1alpha1.WorkspaceType)
}

// resolvePath maps a workspace path to the logical cluster hosted on this
// shard whose canonical path it is.
//
// A path may also start with the name of a hosted logical cluster whose
// canonical path differs (`<home cluster>:project` for `user:alice:project`):
// the name stands for that path.
func (i kcpInformers) resolvePath(p logicalcluster.Path) (logicalcluster.Name, bool) {
	if cluster, ok := i.byCanonicalPath(p); ok {
		return cluster, true
	}
	first, rest, nested := strings.Cut(string(p), ":")
	if !nested {
		return "", false
	}
	canonical := i.clusterPath(logicalcluster.Name(first))
	if canonical == "" || string(canonical) == first {
		return "", false
	}
	return i.byCanonicalPath(canonical.Join(rest))
}

func (i kcpInformers) byCanonicalPath(p logicalcluster.Path) (logicalcluster.Name, bool) {
	objs, err := i.logicalClusters.ByIndex(byPath, string(p))
	if err != nil || len(objs) == 0 {
		return "", false
	}
	lc := objs[0].(*corev1alpha1.LogicalCluster)
	cluster, ok := logicalcluster.ObjectCluster(lc.Annotations)
	return cluster, ok
}

// clusterPath returns the canonical path of a hosted logical cluster, or "".
func (i kcpInformers) clusterPath(cluster logicalcluster.Name) logicalcluster.Path {
	if lc := i.logicalCluster(cluster); lc != nil {
		return logicalcluster.Path(lc.Annotations[logicalcluster.PathAnnotationKey])
	}
	return ""
}

// bindingsOf returns the APIBindings of a logical cluster.
func (i kcpInformers) bindingsOf(cluster logicalcluster.Name) []*apisv1alpha2.APIBinding {
	objs, _ := i.apiBindings.List(cluster, "")
	out := make([]*apisv1alpha2.APIBinding, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*apisv1alpha2.APIBinding))
	}
	return out
}
