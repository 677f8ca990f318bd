// Package workspacemount reconciles mounted Workspaces (spec.mount, kcp's
// WorkspaceMounts gate): it reads the object the mount names in the
// workspace's parent, shows its status.phase as the WorkspaceMountReady
// condition and the workspace's phase (Ready, or Unavailable otherwise),
// and copies its status.URL into spec.URL, where the front-proxy reads
// where to send the workspace's requests. A mounted workspace has no
// logical cluster: the workspace controller leaves it alone.
package workspacemount

import (
	"context"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// recheck is how often a mounted workspace is read again without an event:
// the watches that feed Observe do not report deleted mount objects.
const recheck = 30 * time.Second

// Controller reconciles mounted Workspaces.
type Controller struct {
	loop       *loop.Loop
	workspaces *wildcardinformer.Informer
	local      *kcpclient.Client
	// getObject reads a mount object in a cluster.
	getObject func(ctx context.Context, cluster logicalcluster.Name, ref tenancyv1alpha1.ObjectReference) (*unstructured.Unstructured, error)

	mu sync.Mutex
	// byRef maps a mount object's key to the keys of the workspaces that
	// mount it.
	byRef map[string]map[string]struct{}
}

// Config holds the controller's dependencies.
type Config struct {
	Workspaces *wildcardinformer.Informer
	// Local writes Workspaces on this shard.
	Local *kcpclient.Client
	// Loopback reads mount objects on this shard.
	Loopback *rest.Config
}

// New returns the controller.
func New(cfg Config) *Controller {
	c := &Controller{workspaces: cfg.Workspaces, local: cfg.Local, byRef: map[string]map[string]struct{}{}}
	c.getObject = func(ctx context.Context, cluster logicalcluster.Name, ref tenancyv1alpha1.ObjectReference) (*unstructured.Unstructured, error) {
		client, err := dynamic.NewForConfig(kcpclient.ClusterConfig(cfg.Loopback, cluster))
		if err != nil {
			return nil, err
		}
		gvr := refResource(ref)
		if ref.Namespace != "" {
			return client.Resource(gvr).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		}
		return client.Resource(gvr).Get(ctx, ref.Name, metav1.GetOptions{})
	}
	c.loop = loop.New("workspacemount", c.reconcile)
	c.workspaces.AddHandler(c.loop.Handler(func(obj interface{}) (string, bool) {
		ws, ok := obj.(*tenancyv1alpha1.Workspace)
		if !ok || ws.Spec.Mount == nil {
			return "", false
		}
		key, err := wildcardinformer.KeyFunc(ws)
		if err != nil {
			return "", false
		}
		if parent, ok := logicalcluster.ObjectCluster(ws.Annotations); ok {
			c.remember(refKey(parent, refResource(ws.Spec.Mount.Reference), ws.Spec.Mount.Reference.Namespace, ws.Spec.Mount.Reference.Name), key)
		}
		return key, true
	}))
	return c
}

// Run runs the workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers) }

// Observe is given objects of every resource as the shard's watches see
// them created or updated; a mount object's change requeues the
// workspaces that mount it.
func (c *Controller) Observe(resource schema.GroupVersionResource, obj metav1.Object) {
	cluster, ok := logicalcluster.ObjectCluster(obj.GetAnnotations())
	if !ok {
		return
	}
	key := refKey(cluster, resource, obj.GetNamespace(), obj.GetName())
	c.mu.Lock()
	keys := make([]string, 0, len(c.byRef[key]))
	for k := range c.byRef[key] {
		keys = append(keys, k)
	}
	c.mu.Unlock()
	for _, k := range keys {
		c.loop.Enqueue(k)
	}
}

func (c *Controller) remember(ref, wsKey string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byRef[ref] == nil {
		c.byRef[ref] = map[string]struct{}{}
	}
	c.byRef[ref][wsKey] = struct{}{}
}

func (c *Controller) forget(wsKey string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for ref, keys := range c.byRef {
		delete(keys, wsKey)
		if len(keys) == 0 {
			delete(c.byRef, ref)
		}
	}
}

func (c *Controller) reconcile(ctx context.Context, key string) error {
	parent, _, name, ok := wildcardinformer.SplitKey(key)
	if !ok {
		return nil
	}
	obj, exists, err := c.workspaces.Get(parent, "", name)
	if err != nil {
		return err
	}
	if !exists {
		c.forget(key)
		return nil
	}
	ws := obj.(*tenancyv1alpha1.Workspace).DeepCopy()
	if ws.Spec.Mount == nil || ws.DeletionTimestamp != nil {
		return nil
	}
	mount, err := c.getObject(ctx, parent, ws.Spec.Mount.Reference)
	if apierrors.IsNotFound(err) {
		mount, err = nil, nil
	}
	if err != nil {
		return err
	}
	want := ws.DeepCopy()
	observe(want, mount)
	if want.Spec.URL != ws.Spec.URL {
		// spec first: the front-proxy must know the URL when it sees Ready.
		spec := ws.DeepCopy()
		spec.Spec.URL = want.Spec.URL
		if ws, err = c.write(ctx, parent, spec); err != nil {
			return err
		}
		want.ObjectMeta = ws.ObjectMeta
		want.Spec = ws.Spec
	}
	if !statusEqual(ws, want) {
		if _, err := c.write(ctx, parent, want, "status"); err != nil {
			return err
		}
	}
	return loop.RequeueAfter(recheck)
}

func (c *Controller) write(ctx context.Context, parent logicalcluster.Name, ws *tenancyv1alpha1.Workspace, subresource ...string) (*tenancyv1alpha1.Workspace, error) {
	ws.APIVersion, ws.Kind = tenancyv1alpha1.SchemeGroupVersion.String(), "Workspace"
	out := &tenancyv1alpha1.Workspace{}
	if err := c.local.Update(ctx, parent, kcpclient.Workspaces, ws.Name, ws, out, subresource...); err != nil {
		return nil, err
	}
	return out, nil
}

// refResource is the resource of a mount reference: its kind in lower
// case with an "s", as kcp guesses it.
func refResource(ref tenancyv1alpha1.ObjectReference) schema.GroupVersionResource {
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	return gv.WithResource(strings.ToLower(ref.Kind) + "s")
}

// refKey identifies a mount object across versions.
func refKey(cluster logicalcluster.Name, gvr schema.GroupVersionResource, namespace, name string) string {
	return strings.Join([]string{string(cluster), gvr.Group, gvr.Resource, namespace, name}, "|")
}
