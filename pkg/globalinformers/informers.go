// Package globalinformers gives a shard what it reads of logical clusters
// other shards host: informers of the Shards, WorkspaceTypes, APIExports,
// APIResourceSchemas, the replicated ClusterRoles and ClusterRoleBindings,
// the LogicalClusterMigrations and the admission configuration of export workspaces of every shard, listed and watched on the cache
// server across all shards and clusters
// (/services/cache/shards/*/clusters/*/...). Consumers read their shard's
// own informers first and these second.
//
// Each informer keeps a copy of what it holds in the shard's root directory
// and starts from that copy when the cache server cannot be reached, so a
// shard that has seen the cache once starts and serves without it: it still
// knows the shards to schedule to, the types of its workspaces and the
// exports (with their identities) of its bindings.
package globalinformers

import (
	"context"
	"fmt"
	"path/filepath"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// Informers hold the replicas of every shard's objects the cache server
// has. Their keys and indexes are those of the shard's own wildcard
// informers: each replica carries its origin cluster in kcp.io/cluster.
type Informers struct {
	Shards         *wildcardinformer.Informer
	WorkspaceTypes *wildcardinformer.Informer
	// WorkspaceAuthenticationConfigurations are the JWT issuers of the
	// WorkspaceTypes.
	WorkspaceAuthenticationConfigurations *wildcardinformer.Informer
	APIExports                            *wildcardinformer.Informer
	APIResourceSchemas                    *wildcardinformer.Informer
	ClusterRoles                          *wildcardinformer.Informer
	ClusterRoleBindings                   *wildcardinformer.Informer
	// The admission configuration of workspaces that hold an APIExport:
	// it judges the resources bound from them on this shard.
	ValidatingWebhooks       *wildcardinformer.Informer
	MutatingWebhooks         *wildcardinformer.Informer
	ValidatingPolicies       *wildcardinformer.Informer
	ValidatingPolicyBindings *wildcardinformer.Informer
	MutatingPolicies         *wildcardinformer.Informer
	MutatingPolicyBindings   *wildcardinformer.Informer
	// LogicalClusterMigrations of every shard: the origin and the
	// destination of a move read it here, as kcp's shards do.
	LogicalClusterMigrations *wildcardinformer.Informer

	copies []*copiedListWatch
}

// resource is one kind the informers read from the cache server.
type resource struct {
	client   rest.Interface
	gv       schema.GroupVersion
	resource string
	example  runtime.Object
	newList  func() runtime.Object
	informer **wildcardinformer.Informer
}

// byPath indexes replicas by the kcp.io/path annotation of their origin
// cluster (set by the pathannotation admission plugin).
const byPath = "path"

func pathIndex(obj interface{}) ([]string, error) {
	m, err := metaOf(obj)
	if err != nil {
		return nil, err
	}
	if p := m.GetAnnotations()[logicalcluster.PathAnnotationKey]; p != "" {
		return []string{p}, nil
	}
	return nil, nil
}

func metaOf(obj interface{}) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	return m, nil
}

// New returns informers of the cache server's replicas. cacheServer
// reaches the cache server (its base URL, with a reader's credentials); dir
// keeps the copies.
func New(cacheServer *rest.Config, dir string) (*Informers, error) {
	i := &Informers{}
	all := rest.CopyConfig(cacheServer)
	all.Host = cacheclient.URL(cacheServer.Host, cacheclient.WildcardShard, logicalcluster.Wildcard)
	kube, err := kubernetes.NewForConfig(all)
	if err != nil {
		return nil, err
	}
	rbacClient, admissionClient := kube.RbacV1().RESTClient(), kube.AdmissionregistrationV1().RESTClient()
	admission := admissionregistrationv1.SchemeGroupVersion
	for _, r := range []resource{
		{nil, corev1alpha1.SchemeGroupVersion, "shards", &corev1alpha1.Shard{}, func() runtime.Object { return &corev1alpha1.ShardList{} }, &i.Shards},
		{nil, tenancyv1alpha1.SchemeGroupVersion, "workspacetypes", &tenancyv1alpha1.WorkspaceType{}, func() runtime.Object { return &tenancyv1alpha1.WorkspaceTypeList{} }, &i.WorkspaceTypes},
		{nil, tenancyv1alpha1.SchemeGroupVersion, "workspaceauthenticationconfigurations", &tenancyv1alpha1.WorkspaceAuthenticationConfiguration{}, func() runtime.Object { return &tenancyv1alpha1.WorkspaceAuthenticationConfigurationList{} }, &i.WorkspaceAuthenticationConfigurations},
		{nil, apisv1alpha2.SchemeGroupVersion, "apiexports", &apisv1alpha2.APIExport{}, func() runtime.Object { return &apisv1alpha2.APIExportList{} }, &i.APIExports},
		{nil, apisv1alpha1.SchemeGroupVersion, "apiresourceschemas", &apisv1alpha1.APIResourceSchema{}, func() runtime.Object { return &apisv1alpha1.APIResourceSchemaList{} }, &i.APIResourceSchemas},
		{rbacClient, rbacv1.SchemeGroupVersion, "clusterroles", &rbacv1.ClusterRole{}, func() runtime.Object { return &rbacv1.ClusterRoleList{} }, &i.ClusterRoles},
		{rbacClient, rbacv1.SchemeGroupVersion, "clusterrolebindings", &rbacv1.ClusterRoleBinding{}, func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} }, &i.ClusterRoleBindings},
		{admissionClient, admission, "validatingwebhookconfigurations", &admissionregistrationv1.ValidatingWebhookConfiguration{}, func() runtime.Object { return &admissionregistrationv1.ValidatingWebhookConfigurationList{} }, &i.ValidatingWebhooks},
		{admissionClient, admission, "mutatingwebhookconfigurations", &admissionregistrationv1.MutatingWebhookConfiguration{}, func() runtime.Object { return &admissionregistrationv1.MutatingWebhookConfigurationList{} }, &i.MutatingWebhooks},
		{admissionClient, admission, "validatingadmissionpolicies", &admissionregistrationv1.ValidatingAdmissionPolicy{}, func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyList{} }, &i.ValidatingPolicies},
		{admissionClient, admission, "validatingadmissionpolicybindings", &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{} }, &i.ValidatingPolicyBindings},
		{admissionClient, admission, "mutatingadmissionpolicies", &admissionregistrationv1.MutatingAdmissionPolicy{}, func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyList{} }, &i.MutatingPolicies},
		{nil, migrationv1alpha1.SchemeGroupVersion, "logicalclustermigrations", &migrationv1alpha1.LogicalClusterMigration{}, func() runtime.Object { return &migrationv1alpha1.LogicalClusterMigrationList{} }, &i.LogicalClusterMigrations},
		{admissionClient, admission, "mutatingadmissionpolicybindings", &admissionregistrationv1.MutatingAdmissionPolicyBinding{}, func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyBindingList{} }, &i.MutatingPolicyBindings},
	} {
		client := r.client
		if client == nil {
			if client, err = kcpclient.RESTClient(all, r.gv); err != nil {
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
		inf := wildcardinformer.NewRemote(lw, r.example, "global-"+r.resource)
		lw.informer = inf
		inf.AddHandler(lw)
		*r.informer = inf
		i.copies = append(i.copies, lw)
	}
	for _, inf := range []*wildcardinformer.Informer{i.WorkspaceTypes, i.APIExports} {
		if err := inf.AddIndexers(cache.Indexers{byPath: pathIndex}); err != nil {
			return nil, err
		}
	}
	return i, nil
}

// All returns every informer.
func (i *Informers) All() []*wildcardinformer.Informer {
	return append([]*wildcardinformer.Informer{i.Shards, i.WorkspaceTypes, i.WorkspaceAuthenticationConfigurations, i.APIExports, i.APIResourceSchemas, i.ClusterRoles, i.ClusterRoleBindings, i.LogicalClusterMigrations}, i.Admission()...)
}

// Admission returns the informers of the admission configuration.
func (i *Informers) Admission() []*wildcardinformer.Informer {
	return []*wildcardinformer.Informer{i.ValidatingWebhooks, i.MutatingWebhooks, i.ValidatingPolicies, i.ValidatingPolicyBindings, i.MutatingPolicies, i.MutatingPolicyBindings}
}

// Run lists and watches the cache server and keeps the copies until ctx is
// done.
func (i *Informers) Run(ctx context.Context) {
	for _, c := range i.copies {
		go c.keep(ctx)
		go c.informer.Run(ctx)
	}
	<-ctx.Done()
}

// Reachable returns why the cache server could not be listed or watched
// last, nil when every informer reached it last time it tried.
func (i *Informers) Reachable() error {
	for _, c := range i.copies {
		if err := c.err(); err != nil {
			return fmt.Errorf("the cache server is unreachable: %w", err)
		}
	}
	return nil
}

// Shard returns the named Shard as the cache server (or the copy of it)
// knows it, or nil.
func (i *Informers) Shard(name string) *corev1alpha1.Shard {
	obj, exists, err := i.Shards.Get(logicalcluster.Root, "", name)
	if err != nil || !exists {
		return nil
	}
	return obj.(*corev1alpha1.Shard)
}

// ResolvePath maps the path of a logical cluster another shard hosts to its
// name, by the path its replicated WorkspaceTypes and APIExports carry. A
// path that names two clusters (a stale replica) resolves to none.
func (i *Informers) ResolvePath(p logicalcluster.Path) (logicalcluster.Name, bool) {
	var found logicalcluster.Name
	for _, inf := range []*wildcardinformer.Informer{i.APIExports, i.WorkspaceTypes} {
		objs, err := inf.ByIndex(byPath, string(p))
		if err != nil {
			return "", false
		}
		for _, o := range objs {
			m, err := metaOf(o)
			if err != nil {
				return "", false
			}
			cluster, ok := logicalcluster.ObjectCluster(m.GetAnnotations())
			if !ok || (found != "" && found != cluster) {
				return "", false
			}
			found = cluster
		}
	}
	return found, found != ""
}
