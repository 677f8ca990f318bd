// Package apibinding binds APIBindings of all logical clusters of the shard
// to their APIExports: it resolves the export, reads its
// APIResourceSchemas, refuses resources that collide with a CRD or another
// binding of the workspace (NamingConflicts), and records what the
// workspace serves in status.boundResources, moving the binding from phase
// Binding to Bound. Serving the bound resources reads that status. It also
// applies the permission claims the binding accepts
// (reconcile_permissionclaims.go); ClaimedObjects (claimedobjects.go)
// relabels single claimed objects whose claim labels are stale.
//
// Everything is read from wildcard informers; bindings are requeued when
// their export, the export's schemas, or the CRDs and bindings they might
// collide with change.
package apibinding

import (
	"context"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/permissionclaim"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// apiBindings is the resource the controller writes the status of.
var apiBindings = apisv1alpha2.SchemeGroupVersion.WithResource("apibindings")

// byExport indexes APIBindings by "<workspace>|<export name>", with the
// workspace both as written in the reference (a path, or the binding's own
// cluster when empty) and as resolved in status.apiExportClusterName.
const byExport = "apibinding-export"

func exportKey(workspace, name string) string { return workspace + "|" + name }

func exportIndex(obj interface{}) ([]string, error) {
	b, ok := obj.(*apisv1alpha2.APIBinding)
	if !ok || b.Spec.Reference.Export == nil {
		return nil, nil
	}
	name := b.Spec.Reference.Export.Name
	path := b.Spec.Reference.Export.Path
	if path == "" {
		cluster, _ := logicalcluster.ObjectCluster(b.Annotations)
		path = string(cluster)
	}
	keys := []string{exportKey(path, name)}
	if c := b.Status.APIExportClusterName; c != "" && c != path {
		keys = append(keys, exportKey(c, name))
	}
	return keys, nil
}

// Config are the controller's informers and clients.
type Config struct {
	// APIBindings, APIExports, APIResourceSchemas and CRDs are wildcard
	// informers of those kinds.
	APIBindings, APIExports, APIResourceSchemas, CRDs *wildcardinformer.Informer
	// ResolvePath maps a workspace path to its logical cluster.
	ResolvePath func(logicalcluster.Path) (logicalcluster.Name, bool)
	// ClusterPath returns the canonical path of a hosted logical cluster,
	// or "" when unknown.
	ClusterPath func(logicalcluster.Name) logicalcluster.Path
	// Client writes the bindings' status as the shard's loopback identity.
	Client *kcpclient.Client
	// DeleteInstances deletes the objects of a bound resource in a
	// cluster and returns how many remain; a deleted binding waits for it.
	DeleteInstances func(ctx context.Context, cluster logicalcluster.Name, group, resource string) (int, error)
	// GlobalAPIExports and GlobalAPIResourceSchemas hold exports and
	// schemas of logical clusters other shards host (root's, on a shard
	// without root); they are read when the shard's own informers do not
	// have an object. nil when there are none.
	GlobalAPIExports, GlobalAPIResourceSchemas *wildcardinformer.Informer
	// Hosted tells whether the shard hosts a logical cluster; nil: all.
	Hosted func(logicalcluster.Name) bool
	// Relabel has the objects of a claimed resource in a cluster rewritten
	// so that admission sets their claim labels (Relabeler.Relabel); nil:
	// accepted claims are recorded as applied without relabelling.
	Relabel func(ctx context.Context, cluster logicalcluster.Name, gr schema.GroupResource) error
	// CacheUnreachable says why the cache server (the global informers'
	// source) cannot be read, nil when it can; nil: never.
	CacheUnreachable func() error
}

// Controller reconciles the APIBindings of all logical clusters of the
// shard.
type Controller struct {
	loop     *loop.Loop
	bindings *wildcardinformer.Informer
	// exports are the shard's own and the global exports.
	exports []*wildcardinformer.Informer
	// clusterPath returns the canonical path of a cluster, or "".
	clusterPath func(logicalcluster.Name) logicalcluster.Path
	// getAPIBinding reads an APIBinding; nil when it is gone.
	getAPIBinding func(cluster logicalcluster.Name, name string) (*apisv1alpha2.APIBinding, error)
	// updateStatus writes an APIBinding's status.
	updateStatus func(ctx context.Context, cluster logicalcluster.Name, binding *apisv1alpha2.APIBinding) error
	// touch writes an APIBinding unchanged, for admission to set what it
	// sets on every write.
	touch func(ctx context.Context, cluster logicalcluster.Name, name string) error
	// locks serialize the reconciles of one cluster's bindings, so that two
	// bindings of a workspace never claim the same resource at once.
	locks    [64]sync.Mutex
	binding  *bindingReconciler
	claims   *permissionClaimsReconciler
	deletion *deletionReconciler
}

// New returns the controller and registers its handlers and indexes; call
// before the informers run.
func New(c Config) (*Controller, error) {
	if err := c.APIBindings.AddIndexers(cache.Indexers{byExport: exportIndex}); err != nil {
		return nil, err
	}
	ctrl := &Controller{
		bindings:    c.APIBindings,
		exports:     present(c.APIExports, c.GlobalAPIExports),
		clusterPath: c.ClusterPath,
		getAPIBinding: func(cluster logicalcluster.Name, name string) (*apisv1alpha2.APIBinding, error) {
			obj, exists, err := c.APIBindings.Get(cluster, "", name)
			if err != nil || !exists {
				return nil, err
			}
			return obj.(*apisv1alpha2.APIBinding), nil
		},
		updateStatus: func(ctx context.Context, cluster logicalcluster.Name, binding *apisv1alpha2.APIBinding) error {
			binding.APIVersion, binding.Kind = apisv1alpha2.SchemeGroupVersion.String(), "APIBinding"
			return c.Client.Update(ctx, cluster, apiBindings, binding.Name, binding, &apisv1alpha2.APIBinding{}, "status")
		},
		touch: func(ctx context.Context, cluster logicalcluster.Name, name string) error {
			return c.Client.Patch(ctx, cluster, apiBindings, name, types.MergePatchType, []byte("{}"), nil)
		},
		binding: &bindingReconciler{
			resolvePath:      c.ResolvePath,
			hosted:           orAll(c.Hosted),
			cacheUnreachable: orReachable(c.CacheUnreachable),
			getAPIExport: func(cluster logicalcluster.Name, name string) *apisv1alpha2.APIExport {
				obj, exists, err := wildcardinformer.First(cluster, "", name, c.APIExports, c.GlobalAPIExports)
				if err != nil || !exists {
					return nil
				}
				return obj.(*apisv1alpha2.APIExport)
			},
			getAPIResourceSchema: func(cluster logicalcluster.Name, name string) *apisv1alpha1.APIResourceSchema {
				obj, exists, err := wildcardinformer.First(cluster, "", name, c.APIResourceSchemas, c.GlobalAPIResourceSchemas)
				if err != nil || !exists {
					return nil
				}
				return obj.(*apisv1alpha1.APIResourceSchema)
			},
			listCRDs: func(cluster logicalcluster.Name) []*apiextensionsv1.CustomResourceDefinition {
				objs, _ := c.CRDs.List(cluster, "")
				crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(objs))
				for _, o := range objs {
					crds = append(crds, o.(*apiextensionsv1.CustomResourceDefinition))
				}
				return crds
			},
			listAPIBindings: func(cluster logicalcluster.Name) []*apisv1alpha2.APIBinding {
				return listBindings(c.APIBindings, cluster)
			},
			recent: newRecentBindings(),
		},
		claims: &permissionClaimsReconciler{relabel: c.Relabel},
	}
	ctrl.deletion = &deletionReconciler{
		deleteInstances: c.DeleteInstances,
		updateStatus:    ctrl.updateStatus,
		update: func(ctx context.Context, cluster logicalcluster.Name, binding *apisv1alpha2.APIBinding) error {
			binding.APIVersion, binding.Kind = apisv1alpha2.SchemeGroupVersion.String(), "APIBinding"
			err := c.Client.Update(ctx, cluster, apiBindings, binding.Name, binding, &apisv1alpha2.APIBinding{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		},
	}
	ctrl.loop = loop.New("apibinding", ctrl.reconcile)
	c.APIBindings.AddHandler(bindingHandler{ctrl})
	for _, inf := range ctrl.exports {
		inf.AddHandler(funcHandler(ctrl.enqueueForExport))
	}
	for _, inf := range present(c.APIResourceSchemas, c.GlobalAPIResourceSchemas) {
		inf.AddHandler(funcHandler(ctrl.enqueueForSchema))
	}
	c.CRDs.AddHandler(funcHandler(func(obj interface{}) { ctrl.enqueueUnsettled(objectCluster(obj), "") }))
	return ctrl, nil
}

// present returns the informers that are not nil.
func present(informers ...*wildcardinformer.Informer) []*wildcardinformer.Informer {
	out := make([]*wildcardinformer.Informer, 0, len(informers))
	for _, inf := range informers {
		if inf != nil {
			out = append(out, inf)
		}
	}
	return out
}

func listBindings(inf *wildcardinformer.Informer, cluster logicalcluster.Name) []*apisv1alpha2.APIBinding {
	objs, _ := inf.List(cluster, "")
	bindings := make([]*apisv1alpha2.APIBinding, 0, len(objs))
	for _, o := range objs {
		bindings = append(bindings, o.(*apisv1alpha2.APIBinding))
	}
	return bindings
}

// Run runs the workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers) }

func objectCluster(obj interface{}) logicalcluster.Name {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	cluster, _ := logicalcluster.ObjectCluster(m.GetAnnotations())
	return cluster
}

func objectName(obj interface{}) string {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetName()
}

// funcHandler calls one function on every change.
type funcHandler func(obj interface{})

func (f funcHandler) OnAdd(obj interface{})       { f(obj) }
func (f funcHandler) OnUpdate(_, obj interface{}) { f(obj) }
func (f funcHandler) OnDelete(obj interface{})    { f(obj) }

// bindingHandler enqueues a changed binding; a deleted one may free
// resources that other bindings of its cluster wait for.
type bindingHandler struct{ c *Controller }

func (h bindingHandler) enqueue(obj interface{}) {
	if key, err := wildcardinformer.KeyFunc(obj); err == nil {
		h.c.loop.Enqueue(key)
	}
}

func (h bindingHandler) OnAdd(obj interface{})       { h.enqueue(obj) }
func (h bindingHandler) OnUpdate(_, obj interface{}) { h.enqueue(obj) }
func (h bindingHandler) OnDelete(obj interface{}) {
	h.enqueue(obj)
	h.c.enqueueUnsettled(objectCluster(obj), objectName(obj))
}

// enqueueUnsettled enqueues the bindings of a cluster that are not up to
// date (e.g. waiting on a naming conflict), except the one named skip.
func (c *Controller) enqueueUnsettled(cluster logicalcluster.Name, skip string) {
	if cluster == "" {
		return
	}
	for _, b := range listBindings(c.bindings, cluster) {
		if b.Name != skip && !b.Status.Conditions.IsTrue(apisv1alpha2.BindingUpToDate) {
			c.loop.Enqueue(wildcardinformer.Key(cluster, "", b.Name))
		}
	}
}

// enqueueForExport enqueues the bindings that refer to an export, by its
// cluster name or its path.
func (c *Controller) enqueueForExport(obj interface{}) {
	cluster, name := objectCluster(obj), objectName(obj)
	if cluster == "" {
		return
	}
	workspaces := map[string]bool{string(cluster): true}
	if p := c.clusterPath(cluster); p != "" {
		workspaces[string(p)] = true
	}
	// An export another shard hosts carries its workspace's path.
	if m, ok := obj.(metav1.Object); ok {
		if p := m.GetAnnotations()[logicalcluster.PathAnnotationKey]; p != "" {
			workspaces[p] = true
		}
	}
	for w := range workspaces {
		objs, _ := c.bindings.ByIndex(byExport, exportKey(w, name))
		for _, o := range objs {
			if key, err := wildcardinformer.KeyFunc(o); err == nil {
				c.loop.Enqueue(key)
			}
		}
	}
}

// enqueueForSchema enqueues the bindings of the exports of the schema's
// cluster that publish it.
func (c *Controller) enqueueForSchema(obj interface{}) {
	cluster, name := objectCluster(obj), objectName(obj)
	if cluster == "" {
		return
	}
	for _, inf := range c.exports {
		objs, _ := inf.List(cluster, "")
		for _, o := range objs {
			export := o.(*apisv1alpha2.APIExport)
			for _, r := range export.Spec.Resources {
				if r.Schema == name {
					c.enqueueForExport(export)
					break
				}
			}
		}
	}
}

func (c *Controller) lock(cluster logicalcluster.Name) *sync.Mutex {
	var h uint32 = 2166136261
	for i := 0; i < len(cluster); i++ {
		h = (h ^ uint32(cluster[i])) * 16777619
	}
	return &c.locks[h%uint32(len(c.locks))]
}

func (c *Controller) reconcile(ctx context.Context, key string) error {
	cluster, _, name, ok := wildcardinformer.SplitKey(key)
	if !ok {
		return nil
	}
	mu := c.lock(cluster)
	mu.Lock()
	defer mu.Unlock()
	binding, err := c.getAPIBinding(cluster, name)
	if err != nil {
		return err
	}
	if binding == nil {
		c.binding.recent.forget(cluster, name)
		return nil
	}
	if binding.DeletionTimestamp != nil {
		return c.deletion.reconcile(ctx, cluster, binding)
	}
	binding = binding.DeepCopy()
	old := binding.Status.DeepCopy()
	export, reconcileErr := c.binding.reconcile(ctx, cluster, binding)
	if err := c.claims.reconcile(ctx, cluster, binding, old, export); err != nil && reconcileErr == nil {
		reconcileErr = err
	}
	summarize(binding)
	// A binding written before admission set the export label gets it.
	if exportCluster := logicalcluster.Name(binding.Status.APIExportClusterName); exportCluster != "" && binding.Spec.Reference.Export != nil && c.touch != nil &&
		binding.Labels[permissionclaim.ExportLabelKey] != permissionclaim.ExportLabelValue(exportCluster, binding.Spec.Reference.Export.Name) {
		if err := c.touch(ctx, cluster, binding.Name); err != nil && !apierrors.IsNotFound(err) && reconcileErr == nil {
			reconcileErr = err
		}
	}
	if !apiequality.Semantic.DeepEqual(*old, binding.Status) {
		if err := c.updateStatus(ctx, cluster, binding); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			// The claim of this reconcile was not recorded: retract it.
			c.binding.recent.record(cluster, name, logicalcluster.Name(old.APIExportClusterName), old.BoundResources)
			return err
		}
	}
	return reconcileErr
}

// summarize sets Ready from InitialBindingCompleted, as kcp does: conditions
// that turn false after the first binding do not make a binding unready.
func summarize(b *apisv1alpha2.APIBinding) {
	initial := b.Status.Conditions.Get(apisv1alpha2.InitialBindingCompleted)
	if initial == nil {
		return
	}
	ready := *initial
	ready.Type = conditionsv1alpha1.ReadyCondition
	ready.LastTransitionTime = metav1.Time{}
	conditionsv1alpha1.Set(b, ready)
}

func orAll(hosted func(logicalcluster.Name) bool) func(logicalcluster.Name) bool {
	if hosted == nil {
		return func(logicalcluster.Name) bool { return true }
	}
	return hosted
}

func orReachable(unreachable func() error) func() error {
	if unreachable == nil {
		return func() error { return nil }
	}
	return unreachable
}
