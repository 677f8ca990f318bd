// Package serviceaccount gives every namespace of every logical cluster the
// "default" ServiceAccount and the "kube-root-ca.crt" ConfigMap, and puts
// them back when they are deleted, as kube-controller-manager's
// serviceaccount and root-ca-cert-publisher controllers do for one cluster.
//
// Those upstream controllers take a single-cluster client and informers, so
// they cannot serve many logical clusters from one instance; their few
// decisions are re-done here over wildcard informers. TokensController does
// the same for the tokens controller (secret-based service account tokens).
package serviceaccount

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

const (
	// DefaultServiceAccountName is the service account every namespace gets.
	DefaultServiceAccountName = "default"
	// RootCAConfigMapName is the config map with the shard's CA bundle.
	RootCAConfigMapName = "kube-root-ca.crt"
	// RootCAKey is the key of the CA bundle in RootCAConfigMapName.
	RootCAKey = "ca.crt"
	// descriptionAnnotation says what the config map is for, as upstream.
	descriptionAnnotation = "kubernetes.io/description"
	rootCADescription     = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
)

// ListWatchFunc returns a wildcard list/watch of a core resource's objects
// (of example's type) that match selector, selected by the server.
type ListWatchFunc func(resource string, example runtime.Object, selector fields.Selector) cache.ListerWatcher

// ListWatches returns the wildcard list/watches of the objects the
// controller keeps, made by lw: only the default service accounts and the
// root CA config maps, selected by name on the server.
func ListWatches(lw ListWatchFunc) (serviceAccounts, configMaps cache.ListerWatcher) {
	return lw("serviceaccounts", &corev1.ServiceAccount{}, fields.OneTermEqualSelector("metadata.name", DefaultServiceAccountName)),
		lw("configmaps", &corev1.ConfigMap{}, fields.OneTermEqualSelector("metadata.name", RootCAConfigMapName))
}

// Controller keeps the per-namespace objects in all logical clusters.
type Controller struct {
	loop            *loop.Loop
	namespaces      *wildcardinformer.Informer
	serviceAccounts *wildcardinformer.Informer
	configMaps      *wildcardinformer.Informer
	reconcilers     []reconciler
	// clusterDeleting tells whether a logical cluster is being deleted: its
	// namespaces are emptied, and creates in it are refused.
	clusterDeleting func(logicalcluster.Name) bool
}

// reconciler is one step of the reconcile of a namespace.
type reconciler interface {
	reconcile(ctx context.Context, cluster logicalcluster.Name, ns *corev1.Namespace) error
}

// Config is what the controller needs.
type Config struct {
	// Namespaces is the shard's wildcard namespace informer; ServiceAccounts
	// and ConfigMaps must be built on ListWatches.
	Namespaces, ServiceAccounts, ConfigMaps *wildcardinformer.Informer
	// Loopback is the shard's loopback configuration without a cluster.
	Loopback *rest.Config
	// CABundle is published in every namespace.
	CABundle []byte
	// ClusterDeleting tells whether a logical cluster is being deleted;
	// its namespaces are left alone.
	ClusterDeleting func(logicalcluster.Name) bool
	// Stored, when set, is asked before creating an object the informer
	// does not show whether the storage holds it already.
	Stored Reader
}

// Reader tells whether an object exists in the shard's storage
// (loopback.Client).
type Reader interface {
	Exists(ctx context.Context, cluster logicalcluster.Name, gvr schema.GroupVersionResource, namespace, name string) (bool, error)
}

// New returns the controller.
func New(cfg Config) (*Controller, error) {
	httpClient, err := rest.HTTPClientFor(cfg.Loopback)
	if err != nil {
		return nil, err
	}
	clientFor := func(cluster logicalcluster.Name) (corev1client.CoreV1Interface, error) {
		return corev1client.NewForConfigAndClient(kcpclient.ClusterConfig(cfg.Loopback, cluster), httpClient)
	}
	c := newController(cfg.Namespaces, cfg.ServiceAccounts, cfg.ConfigMaps, clientFor, cfg.CABundle)
	c.clusterDeleting = cfg.ClusterDeleting
	if cfg.Stored != nil {
		c.readStored(cfg.Stored)
	}
	return c, nil
}

func newController(namespaces, serviceAccounts, configMaps *wildcardinformer.Informer, clientFor func(logicalcluster.Name) (corev1client.CoreV1Interface, error), caBundle []byte) *Controller {
	c := &Controller{namespaces: namespaces, serviceAccounts: serviceAccounts, configMaps: configMaps}
	c.reconcilers = []reconciler{
		&defaultServiceAccount{
			get: func(cluster logicalcluster.Name, ns string) bool {
				_, exists, _ := serviceAccounts.Get(cluster, ns, DefaultServiceAccountName)
				return exists
			},
			create: func(ctx context.Context, cluster logicalcluster.Name, sa *corev1.ServiceAccount) error {
				client, err := clientFor(cluster)
				if err != nil {
					return err
				}
				_, err = client.ServiceAccounts(sa.Namespace).Create(ctx, sa, metav1CreateOptions)
				return err
			},
		},
		&rootCA{
			caBundle: string(caBundle),
			get: func(cluster logicalcluster.Name, ns string) *corev1.ConfigMap {
				obj, exists, _ := configMaps.Get(cluster, ns, RootCAConfigMapName)
				if !exists {
					return nil
				}
				cm, _ := obj.(*corev1.ConfigMap)
				return cm
			},
			create: func(ctx context.Context, cluster logicalcluster.Name, cm *corev1.ConfigMap) error {
				client, err := clientFor(cluster)
				if err != nil {
					return err
				}
				_, err = client.ConfigMaps(cm.Namespace).Create(ctx, cm, metav1CreateOptions)
				return err
			},
			update: func(ctx context.Context, cluster logicalcluster.Name, cm *corev1.ConfigMap) error {
				client, err := clientFor(cluster)
				if err != nil {
					return err
				}
				_, err = client.ConfigMaps(cm.Namespace).Update(ctx, cm, metav1UpdateOptions)
				return err
			},
		},
	}
	c.loop = loop.New("serviceaccount", c.reconcile)
	namespaces.AddHandler(c.loop.Handler(nil))
	// A deleted or changed object brings its namespace back to the queue.
	serviceAccounts.AddHandler(changedOrDeleted{c.loop})
	configMaps.AddHandler(changedOrDeleted{c.loop})
	return c
}

// readStored makes the reconcilers ask stored, before creating an object
// their informer does not show, whether the storage holds it already.
func (c *Controller) readStored(stored Reader) {
	for _, r := range c.reconcilers {
		switch r := r.(type) {
		case *defaultServiceAccount:
			r.stored = func(ctx context.Context, cluster logicalcluster.Name, ns string) (bool, error) {
				return stored.Exists(ctx, cluster, corev1.SchemeGroupVersion.WithResource("serviceaccounts"), ns, DefaultServiceAccountName)
			}
		case *rootCA:
			r.stored = func(ctx context.Context, cluster logicalcluster.Name, ns string) (bool, error) {
				return stored.Exists(ctx, cluster, corev1.SchemeGroupVersion.WithResource("configmaps"), ns, RootCAConfigMapName)
			}
		}
	}
}

// changedOrDeleted enqueues the namespace of a changed or deleted object.
// An object that appears needs nothing: mostly this controller created it,
// and a reconcile then would race the other object's informer into a
// second create; Run looks at every namespace once when it starts.
type changedOrDeleted struct{ l *loop.Loop }

func (changedOrDeleted) OnAdd(interface{})             {}
func (h changedOrDeleted) OnUpdate(_, obj interface{}) { h.enqueue(obj) }
func (h changedOrDeleted) OnDelete(obj interface{})    { h.enqueue(obj) }
func (h changedOrDeleted) enqueue(obj interface{}) {
	if key, ok := namespaceKey(obj); ok {
		h.l.Enqueue(key)
	}
}

// namespaceKey is the key of the namespace of a namespaced object.
func namespaceKey(obj interface{}) (string, bool) {
	key, err := wildcardinformer.KeyFunc(obj)
	if err != nil {
		return "", false
	}
	cluster, ns, _, ok := wildcardinformer.SplitKey(key)
	return wildcardinformer.Key(cluster, "", ns), ok && ns != ""
}

// Run runs the workers until ctx is done. The namespace informer may have
// started before the controller's handler was added: every namespace it
// holds is looked at once.
func (c *Controller) Run(ctx context.Context, workers int) {
	for _, key := range c.namespaces.Indexer().ListKeys() {
		c.loop.Enqueue(key)
	}
	c.loop.Run(ctx, workers)
}

func (c *Controller) reconcile(ctx context.Context, key string) error {
	cluster, _, name, ok := wildcardinformer.SplitKey(key)
	if !ok {
		return nil
	}
	obj, exists, err := c.namespaces.Get(cluster, "", name)
	if err != nil || !exists {
		return err
	}
	ns, ok := obj.(*corev1.Namespace)
	if !ok || ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
		return nil
	}
	// The deletion of the cluster deletes these objects; the namespace
	// informer may not show yet that it made the namespace terminate.
	if c.clusterDeleting != nil && c.clusterDeleting(cluster) {
		return nil
	}
	for _, r := range c.reconcilers {
		if err := r.reconcile(ctx, cluster, ns); err != nil {
			return err
		}
	}
	return nil
}
