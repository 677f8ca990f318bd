// Package defaultapibinding is the system:apibindings initializer, kcp's
// "apibinder": a logical cluster whose type (or a type it extends) lists
// spec.defaultAPIBindings is scheduled with the initializer
// system:apibindings. While such a LogicalCluster is Initializing (or
// still Scheduling, while its content is bootstrapped), this
// controller creates one APIBinding per distinct default export, waits until
// each is Bound, and then removes system:apibindings from the
// LogicalCluster's status.initializers; when it was the last one, the same
// write makes the LogicalCluster Ready, as the LogicalCluster controller
// would in the next. The LogicalCluster's condition APIBindingsInitialized
// says what holds it (a missing export, what keeps a binding from binding)
// and, at the end, that all are bound; bindings on their way cost no
// status write. Bindings are created while the LogicalCluster is still
// Scheduling, alongside its content bootstrap; its status is written only
// once it is Initializing.
//
// Only LogicalClusters that still wait for system:apibindings are ever
// queued: workspaces of types without default APIBindings cost nothing
// here.
package defaultapibinding

import (
	"context"
	"slices"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
	"github.com/shardplane/shardplane/pkg/workspacetypes"
)

// apiBindings is the resource the controller creates.
var apiBindings = apisv1alpha2.SchemeGroupVersion.WithResource("apibindings")

// byPending indexes the LogicalClusters that wait for this controller under
// pendingKey, so that an APIExport or WorkspaceType event finds them without
// listing every cluster of the shard.
const (
	byPending  = "defaultapibinding-pending"
	pendingKey = "pending"
)

func pendingIndex(obj interface{}) ([]string, error) {
	if lc, ok := obj.(*corev1alpha1.LogicalCluster); ok && pending(lc) {
		return []string{pendingKey}, nil
	}
	return nil, nil
}

// pending tells whether a LogicalCluster waits for system:apibindings: it is
// not being deleted, still lists the initializer, and is Initializing or
// still Scheduling. Binding starts while the cluster's content is
// bootstrapped (the phase Scheduling ends with that): the two chains of
// writes overlap instead of adding up in every workspace's creation.
func pending(lc *corev1alpha1.LogicalCluster) bool {
	phase := lc.Status.Phase
	return lc.DeletionTimestamp == nil &&
		(phase == corev1alpha1.LogicalClusterPhaseInitializing || phase == corev1alpha1.LogicalClusterPhaseScheduling) &&
		slices.Contains(lc.Status.Initializers, tenancyv1alpha1.WorkspaceAPIBindingsInitializer)
}

// Config are the controller's informers and clients.
type Config struct {
	// LogicalClusters, APIBindings, APIExports and WorkspaceTypes are
	// wildcard informers of those kinds.
	LogicalClusters, APIBindings, APIExports, WorkspaceTypes *wildcardinformer.Informer
	// ResolvePath maps a workspace path to its logical cluster.
	ResolvePath func(logicalcluster.Path) (logicalcluster.Name, bool)
	// Types finds the WorkspaceTypes of a logical cluster.
	Types workspacetypes.Resolver
	// Client creates APIBindings and writes LogicalCluster status as the
	// shard's loopback identity, which may bind any export.
	Client *kcpclient.Client
	// GlobalAPIExports and GlobalWorkspaceTypes hold exports and types of
	// logical clusters other shards host (root's, on a shard without
	// root): exports are read from them when the shard's own informer does
	// not have one, and changes to either requeue waiting clusters. nil
	// when there are none.
	GlobalAPIExports, GlobalWorkspaceTypes *wildcardinformer.Informer
	// InProcess, when set, creates the bindings of a cluster that is still
	// Scheduling through the shard's storages.
	InProcess Creator
}

// Creator creates objects in a logical cluster through the shard's REST
// storages, leaving existing ones alone (loopback.Client).
type Creator interface {
	Create(ctx context.Context, cluster logicalcluster.Name, objs ...runtime.Object) error
}

// Controller reconciles the LogicalClusters of the shard that wait for
// system:apibindings.
type Controller struct {
	loop            *loop.Loop
	logicalClusters *wildcardinformer.Informer
	// updateStatus writes a LogicalCluster's status.
	updateStatus func(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) error
	bindings     *bindingsReconciler
}

// New returns the controller and registers its handlers and index; call
// before the informers run.
func New(c Config) (*Controller, error) {
	if err := c.LogicalClusters.AddIndexers(cache.Indexers{byPending: pendingIndex}); err != nil {
		return nil, err
	}
	ctrl := &Controller{
		logicalClusters: c.LogicalClusters,
		updateStatus: func(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) error {
			lc.APIVersion, lc.Kind = corev1alpha1.SchemeGroupVersion.String(), "LogicalCluster"
			return c.Client.Update(ctx, cluster, kcpclient.LogicalClusters, lc.Name, lc, &corev1alpha1.LogicalCluster{}, "status")
		},
		bindings: &bindingsReconciler{
			resolveTypes: func(ref tenancyv1alpha1.WorkspaceTypeReference) ([]*tenancyv1alpha1.WorkspaceType, []tenancyv1alpha1.WorkspaceTypeReference, error) {
				wt, ref, err := c.Types.Resolve(ref, "")
				if err != nil {
					return nil, nil, err
				}
				return c.Types.ExtendedTypes(wt, ref)
			},
			getAPIExport: func(cluster logicalcluster.Name, path logicalcluster.Path, name string) *apisv1alpha2.APIExport {
				exportCluster, ok := apisv1alpha2.ExportCluster(c.ResolvePath, cluster, path)
				if !ok {
					return nil
				}
				obj, exists, err := wildcardinformer.First(exportCluster, "", name, c.APIExports, c.GlobalAPIExports)
				if err != nil || !exists {
					return nil
				}
				return obj.(*apisv1alpha2.APIExport)
			},
			listAPIBindings: func(cluster logicalcluster.Name) []*apisv1alpha2.APIBinding {
				objs, _ := c.APIBindings.List(cluster, "")
				bindings := make([]*apisv1alpha2.APIBinding, 0, len(objs))
				for _, o := range objs {
					bindings = append(bindings, o.(*apisv1alpha2.APIBinding))
				}
				return bindings
			},
			createAPIBinding: func(ctx context.Context, cluster logicalcluster.Name, b *apisv1alpha2.APIBinding) error {
				b.APIVersion, b.Kind = apisv1alpha2.SchemeGroupVersion.String(), "APIBinding"
				return c.Client.Create(ctx, cluster, apiBindings, b, &apisv1alpha2.APIBinding{})
			},
		},
	}
	if c.InProcess != nil {
		ctrl.bindings.createInNewCluster = func(ctx context.Context, cluster logicalcluster.Name, b *apisv1alpha2.APIBinding) error {
			b.APIVersion, b.Kind = apisv1alpha2.SchemeGroupVersion.String(), "APIBinding"
			return c.InProcess.Create(ctx, cluster, b)
		}
	}
	ctrl.loop = loop.New("defaultapibinding", ctrl.reconcile)
	c.LogicalClusters.AddHandler(ctrl.loop.Handler(func(obj interface{}) (string, bool) {
		lc, ok := obj.(*corev1alpha1.LogicalCluster)
		if !ok || !pending(lc) {
			return "", false
		}
		key, err := wildcardinformer.KeyFunc(lc)
		return key, err == nil
	}))
	// A binding changing phase may complete its cluster's initialization.
	c.APIBindings.AddHandler(ctrl.loop.Handler(func(obj interface{}) (string, bool) {
		key, err := wildcardinformer.KeyFunc(obj)
		if err != nil {
			return "", false
		}
		cluster, _, _, _ := wildcardinformer.SplitKey(key)
		lc, exists, err := c.LogicalClusters.Get(cluster, "", corev1alpha1.LogicalClusterName)
		if err != nil || !exists || !pending(lc.(*corev1alpha1.LogicalCluster)) {
			return "", false
		}
		return wildcardinformer.Key(cluster, "", corev1alpha1.LogicalClusterName), true
	}))
	// A missing export or type may have appeared, or a type may list other
	// bindings now.
	for _, inf := range []*wildcardinformer.Informer{c.APIExports, c.WorkspaceTypes, c.GlobalAPIExports, c.GlobalWorkspaceTypes} {
		if inf != nil {
			inf.AddHandler(enqueuePending{ctrl})
		}
	}
	return ctrl, nil
}

// Run runs the workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers) }

// enqueuePending enqueues every LogicalCluster that waits for this
// controller, on any event.
type enqueuePending struct{ c *Controller }

func (h enqueuePending) enqueue() {
	objs, _ := h.c.logicalClusters.ByIndex(byPending, pendingKey)
	for _, o := range objs {
		if key, err := wildcardinformer.KeyFunc(o); err == nil {
			h.c.loop.Enqueue(key)
		}
	}
}

func (h enqueuePending) OnAdd(interface{})                 { h.enqueue() }
func (h enqueuePending) OnUpdate(interface{}, interface{}) { h.enqueue() }
func (h enqueuePending) OnDelete(interface{})              { h.enqueue() }

func (c *Controller) reconcile(ctx context.Context, key string) error {
	cluster, _, name, ok := wildcardinformer.SplitKey(key)
	if !ok || name != corev1alpha1.LogicalClusterName {
		return nil
	}
	obj, exists, err := c.logicalClusters.Get(cluster, "", name)
	if err != nil || !exists {
		return err
	}
	lc := obj.(*corev1alpha1.LogicalCluster)
	if !pending(lc) {
		return nil
	}
	lc = lc.DeepCopy()
	old := lc.Status.DeepCopy()
	reconcileErr := c.bindings.reconcile(ctx, cluster, lc)
	// While Scheduling, the LogicalCluster controller bootstraps the
	// content and then writes the status: bindings are created meanwhile,
	// the status is ours once it is Initializing (the phase change
	// requeues it), so that neither write conflicts with the other.
	if lc.Status.Phase == corev1alpha1.LogicalClusterPhaseScheduling {
		return reconcileErr
	}
	if !apiequality.Semantic.DeepEqual(*old, lc.Status) {
		if err := c.updateStatus(ctx, cluster, lc); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
	}
	return reconcileErr
}
