// Package apiexport gives every APIExport of the shard its identity: the
// secret its spec.identity.secretRef names (created with a random key when
// it is the export's default secret and absent), whose key's hex SHA-256
// becomes status.identityHash, with the condition IdentityValid; and its
// default APIExportEndpointSlice (see endpointSliceReconciler).
//
// Secrets are read on each reconcile through the loopback client, never
// watched: a shard holds many secrets and few exports.
package apiexport

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// apiExports is the resource the controller writes the status of.
var apiExports = apisv1alpha2.SchemeGroupVersion.WithResource("apiexports")

// Controller reconciles the identity of APIExports in all logical clusters
// of the shard.
type Controller struct {
	loop *loop.Loop
	// getAPIExport reads an APIExport; nil when it is gone.
	getAPIExport func(cluster logicalcluster.Name, name string) (*apisv1alpha2.APIExport, error)
	// updateStatus writes an APIExport's status.
	updateStatus func(ctx context.Context, cluster logicalcluster.Name, export *apisv1alpha2.APIExport) error
	identity     *identityReconciler
	slices       *wildcardinformer.Informer
	endpoints    *endpointSliceReconciler
}

// Config is what the controller needs.
type Config struct {
	// APIExports is the shard's wildcard APIExport informer.
	APIExports *wildcardinformer.Informer
	// KCP writes the exports' status and Core reads and creates secrets
	// and namespaces; both act as the shard's loopback identity.
	KCP  *kcpclient.Client
	Core rest.Interface
	// Slices is the shard's wildcard APIExportEndpointSlice informer (run
	// by its own controller); a deleted default slice is created again.
	Slices *wildcardinformer.Informer
}

// New returns the controller.
func New(cfg Config) *Controller {
	exports, kcp, core, slices := cfg.APIExports, cfg.KCP, cfg.Core, cfg.Slices
	c := &Controller{
		slices: slices,
		endpoints: &endpointSliceReconciler{
			sliceExists: func(cluster logicalcluster.Name, name string) bool {
				_, exists, err := slices.Get(cluster, "", name)
				return err != nil || exists
			},
			createSlice: func(ctx context.Context, cluster logicalcluster.Name, slice *apisv1alpha1.APIExportEndpointSlice) error {
				return kcp.Create(ctx, cluster, kcpclient.APIExportEndpointSlices, slice, &apisv1alpha1.APIExportEndpointSlice{})
			},
		},
		getAPIExport: func(cluster logicalcluster.Name, name string) (*apisv1alpha2.APIExport, error) {
			obj, exists, err := exports.Get(cluster, "", name)
			if err != nil || !exists {
				return nil, err
			}
			return obj.(*apisv1alpha2.APIExport), nil
		},
		updateStatus: func(ctx context.Context, cluster logicalcluster.Name, export *apisv1alpha2.APIExport) error {
			export.APIVersion, export.Kind = apisv1alpha2.SchemeGroupVersion.String(), "APIExport"
			return kcp.Update(ctx, cluster, apiExports, export.Name, export, &apisv1alpha2.APIExport{}, "status")
		},
		identity: &identityReconciler{
			getSecret: func(ctx context.Context, cluster logicalcluster.Name, namespace, name string) (*corev1.Secret, error) {
				secret := &corev1.Secret{}
				err := core.Get().AbsPath(cluster.RequestPath(), "api/v1/namespaces", namespace, "secrets", name).Do(ctx).Into(secret)
				if apierrors.IsNotFound(err) {
					return nil, nil
				}
				return secret, err
			},
			createSecret: func(ctx context.Context, cluster logicalcluster.Name, secret *corev1.Secret) error {
				ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: secret.Namespace}}
				err := core.Post().AbsPath(cluster.RequestPath(), "api/v1/namespaces").Body(ns).Do(ctx).Error()
				if err != nil && !apierrors.IsAlreadyExists(err) {
					return err
				}
				secret.APIVersion, secret.Kind = "v1", "Secret"
				return core.Post().AbsPath(cluster.RequestPath(), "api/v1/namespaces", secret.Namespace, "secrets").Body(secret).Do(ctx).Error()
			},
			newKey: NewIdentityKey,
		},
	}
	c.loop = loop.New("apiexport", c.reconcile)
	exports.AddHandler(c.loop.Handler(nil))
	// A deleted slice is made again; a slice and its export share cluster
	// and name, hence their key.
	slices.AddHandler(onDelete{c.loop})
	return c
}

// onDelete enqueues the key of each deleted object only.
type onDelete struct{ loop *loop.Loop }

func (onDelete) OnAdd(interface{})                 {}
func (onDelete) OnUpdate(interface{}, interface{}) {}
func (h onDelete) OnDelete(obj interface{}) {
	if key, err := wildcardinformer.KeyFunc(obj); err == nil {
		h.loop.Enqueue(key)
	}
}

// Run runs the workers, once the slices are known, until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	if err := wildcardinformer.WaitForSync(ctx, c.slices); err != nil {
		return
	}
	c.loop.Run(ctx, workers)
}

func (c *Controller) reconcile(ctx context.Context, key string) error {
	cluster, _, name, ok := wildcardinformer.SplitKey(key)
	if !ok {
		return nil
	}
	export, err := c.getAPIExport(cluster, name)
	if err != nil || export == nil || export.DeletionTimestamp != nil {
		return err
	}
	export = export.DeepCopy()
	old := export.Status.DeepCopy()
	reconcileErr := errors.Join(c.identity.reconcile(ctx, cluster, export), c.endpoints.reconcile(ctx, cluster, export))
	if !apiequality.Semantic.DeepEqual(*old, export.Status) {
		if err := c.updateStatus(ctx, cluster, export); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return reconcileErr
}
