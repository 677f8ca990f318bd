// Package rootshard gives a shard that does not host root what it needs of
// root: informers of the root logical cluster's Shards, WorkspaceTypes,
// APIExports, APIResourceSchemas, ClusterRoles and ClusterRoleBindings (the
// RBAC that judges "use" of root's types and the maximal permission policy
// of root's exports), read from the root shard through
// --root-shard-kubeconfig, and the registration of the shard's own Shard
// object there.
//
// Each informer keeps a copy of what it holds in the shard's root directory
// and starts from that copy when the root shard cannot be reached, so a
// shard that has seen root once starts and serves without it: it still
// knows the shards to schedule to, the types of its workspaces and the
// exports (with their identities) of its default APIBindings. The cache
// server replaces the root shard as the source later; the informers stay
// what the rest of the shard reads.
package rootshard

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	apisv1alpha1 "github.com/kplane-dev/kplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/kplane-dev/kplane/pkg/apis/apis/v1alpha2"
	corev1alpha1 "github.com/kplane-dev/kplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kplane-dev/kplane/pkg/apis/tenancy/v1alpha1"
	"github.com/kplane-dev/kplane/pkg/kcpclient"
	"github.com/kplane-dev/kplane/pkg/logicalcluster"
	"github.com/kplane-dev/kplane/pkg/wildcardinformer"
)

// Informers hold the objects of the root logical cluster that a shard
// without root reads. Their keys and indexes are those of the shard's own
// wildcard informers (every object is in cluster root).
type Informers struct {
	Shards              *wildcardinformer.Informer
	WorkspaceTypes      *wildcardinformer.Informer
	APIExports          *wildcardinformer.Informer
	APIResourceSchemas  *wildcardinformer.Informer
	ClusterRoles        *wildcardinformer.Informer
	ClusterRoleBindings *wildcardinformer.Informer

	// config reaches the root shard's base URL.
	config *rest.Config
	copies []*copiedListWatch
}

// LoadConfig reads the kubeconfig of the root shard (its current context)
// and returns it addressing the shard's base URL: a /clusters/... suffix
// of the server, as admin.kubeconfig's context root has, is removed.
func LoadConfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("root shard kubeconfig %s: %w", path, err)
	}
	cfg.Host = BaseURL(cfg.Host)
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, nil
}

// BaseURL strips a /clusters/<name or path> suffix from a server URL.
func BaseURL(server string) string {
	base, _, _ := strings.Cut(server, "/clusters/")
	return strings.TrimSuffix(base, "/")
}

// resource is one kind the informers read from root.
type resource struct {
	client   rest.Interface
	gv       schema.GroupVersion
	resource string
	example  runtime.Object
	newList  func() runtime.Object
	informer **wildcardinformer.Informer
}

// New returns informers of root's objects on the root shard at config (its
// base URL); dir keeps their copies.
func New(config *rest.Config, dir string) (*Informers, error) {
	i := &Informers{config: config}
	root := kcpclient.ClusterConfig(config, logicalcluster.Root)
	rbac, err := kubernetes.NewForConfig(root)
	if err != nil {
		return nil, err
	}
	rbacClient := rbac.RbacV1().RESTClient()
	for _, r := range []resource{
		{nil, corev1alpha1.SchemeGroupVersion, "shards", &corev1alpha1.Shard{}, func() runtime.Object { return &corev1alpha1.ShardList{} }, &i.Shards},
		{nil, tenancyv1alpha1.SchemeGroupVersion, "workspacetypes", &tenancyv1alpha1.WorkspaceType{}, func() runtime.Object { return &tenancyv1alpha1.WorkspaceTypeList{} }, &i.WorkspaceTypes},
		{nil, apisv1alpha2.SchemeGroupVersion, "apiexports", &apisv1alpha2.APIExport{}, func() runtime.Object { return &apisv1alpha2.APIExportList{} }, &i.APIExports},
		{nil, apisv1alpha1.SchemeGroupVersion, "apiresourceschemas", &apisv1alpha1.APIResourceSchema{}, func() runtime.Object { return &apisv1alpha1.APIResourceSchemaList{} }, &i.APIResourceSchemas},
		{rbacClient, rbacv1.SchemeGroupVersion, "clusterroles", &rbacv1.ClusterRole{}, func() runtime.Object { return &rbacv1.ClusterRoleList{} }, &i.ClusterRoles},
		{rbacClient, rbacv1.SchemeGroupVersion, "clusterrolebindings", &rbacv1.ClusterRoleBinding{}, func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} }, &i.ClusterRoleBindings},
	} {
		client := r.client
		if client == nil {
			if client, err = kcpclient.RESTClient(root, r.gv); err != nil {
				return nil, err
			}
		}
		remote := cache.NewListWatchFromClient(client, r.resource, metav1.NamespaceAll, fields.Everything())
		lw := &copiedListWatch{
			ListerWatcher: remote,
			file:          filepath.Join(dir, r.resource+"."+r.gv.Group+".json"),
			newList:       r.newList,
			dirty:         make(chan struct{}, 1),
		}
		inf := wildcardinformer.New(lw, r.example, "root-shard-"+r.resource)
		lw.informer = inf
		inf.AddHandler(lw)
		*r.informer = inf
		i.copies = append(i.copies, lw)
	}
	return i, nil
}

// All returns every informer.
func (i *Informers) All() []*wildcardinformer.Informer {
	return []*wildcardinformer.Informer{i.Shards, i.WorkspaceTypes, i.APIExports, i.APIResourceSchemas, i.ClusterRoles, i.ClusterRoleBindings}
}

// Run lists and watches root and keeps the copies until ctx is done.
func (i *Informers) Run(ctx context.Context) {
	for _, c := range i.copies {
		go c.keep(ctx)
		go c.informer.Run(ctx)
	}
	<-ctx.Done()
}

// Shard returns the named Shard as root (or the copy of it) knows it, or
// nil.
func (i *Informers) Shard(name string) *corev1alpha1.Shard {
	obj, exists, err := i.Shards.Get(logicalcluster.Root, "", name)
	if err != nil || !exists {
		return nil
	}
	return obj.(*corev1alpha1.Shard)
}
