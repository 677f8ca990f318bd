package shard

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"strings"

	apisv1alpha1 "github.com/kplane-dev/kplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/kplane-dev/kplane/pkg/apis/apis/v1alpha2"
	corev1alpha1 "github.com/kplane-dev/kplane/pkg/apis/core/v1alpha1"
	_ "github.com/kplane-dev/kplane/pkg/apis/install" // kcp's groups in legacyscheme
	tenancyv1alpha1 "github.com/kplane-dev/kplane/pkg/apis/tenancy/v1alpha1"
	"github.com/kplane-dev/kplane/pkg/kcpclient"
	"github.com/kplane-dev/kplane/pkg/logicalcluster"
	"github.com/kplane-dev/kplane/pkg/wildcardinformer"
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

// kcpInformers span all logical clusters of the shard.
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
}

func (i kcpInformers) all() []*wildcardinformer.Informer {
	return []*wildcardinformer.Informer{i.logicalClusters, i.workspaces, i.workspaceTypes, i.shards, i.apiExports, i.apiBindings, i.apiResourceSchemas, i.apiExportEndpointSlices}
}

func newKCPInformers(wildcard *rest.Config) (kcpInformers, error) {
	core, err := kcpclient.RESTClient(wildcard, corev1alpha1.SchemeGroupVersion)
	if err != nil {
		return kcpInformers{}, err
	}
	tenancy, err := kcpclient.RESTClient(wildcard, tenancyv1alpha1.SchemeGroupVersion)
	if err != nil {
		return kcpInformers{}, err
	}
	apis, err := kcpclient.RESTClient(wildcard, apisv1alpha2.SchemeGroupVersion)
	if err != nil {
		return kcpInformers{}, err
	}
	apisV1alpha1, err := kcpclient.RESTClient(wildcard, apisv1alpha1.SchemeGroupVersion)
	if err != nil {
		return kcpInformers{}, err
	}
	lw := func(c *rest.RESTClient, resource string) cache.ListerWatcher {
		return cache.NewListWatchFromClient(c, resource, metav1.NamespaceAll, fields.Everything())
	}
	i := kcpInformers{
		logicalClusters:    wildcardinformer.New(lw(core, "logicalclusters"), &corev1alpha1.LogicalCluster{}, "wildcard-logicalclusters"),
		workspaces:         wildcardinformer.New(lw(tenancy, "workspaces"), &tenancyv1alpha1.Workspace{}, "wildcard-workspaces"),
		workspaceTypes:     wildcardinformer.New(lw(tenancy, "workspacetypes"), &tenancyv1alpha1.WorkspaceType{}, "wildcard-workspacetypes"),
		shards:             wildcardinformer.New(lw(core, "shards"), &corev1alpha1.Shard{}, "wildcard-shards"),
		apiExports:         wildcardinformer.New(lw(apis, "apiexports"), &apisv1alpha2.APIExport{}, "wildcard-apiexports"),
		apiBindings:        wildcardinformer.New(lw(apis, "apibindings"), &apisv1alpha2.APIBinding{}, "wildcard-apibindings"),
		apiResourceSchemas: wildcardinformer.New(lw(apisV1alpha1, "apiresourceschemas"), &apisv1alpha1.APIResourceSchema{}, "wildcard-apiresourceschemas"),
		apiExportEndpointSlices: wildcardinformer.New(lw(apisV1alpha1, "apiexportendpointslices"),
			&apisv1alpha1.APIExportEndpointSlice{}, "wildcard-apiexportendpointslices"),
	}
	if err := i.logicalClusters.AddIndexers(cache.Indexers{byPath: pathIndex}); err != nil {
		return kcpInformers{}, err
	}
	return i, nil
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
