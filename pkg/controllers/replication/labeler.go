package replication

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/shardplane/shardplane/pkg/authorization/clusterrbac"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// byClusterRole indexes ClusterRoleBindings by "<cluster>|<ClusterRole>".
const byClusterRole = "replication-clusterrole"

func clusterRoleIndex(obj interface{}) ([]string, error) {
	crb, ok := obj.(*rbacv1.ClusterRoleBinding)
	if !ok {
		return nil, nil
	}
	name := referencesClusterRole(crb)
	if name == "" {
		return nil, nil
	}
	cluster, _ := logicalcluster.ObjectCluster(crb.Annotations)
	return []string{wildcardinformer.Key(cluster, "", name)}, nil
}

const (
	clusterRolesKind        = "clusterroles"
	clusterRoleBindingsKind = "clusterrolebindings"
)

// Labeler sets ReplicateAnnotationKey on the ClusterRoles and
// ClusterRoleBindings of the shard that other shards need, and removes it
// when they stop being needed, as kcp's replicateclusterrole and
// labelclusterrole(binding)s controllers do:
//   - apis.kcp.io: ClusterRoles that grant bind on apiexports or any verb
//     on apiexports/content, or are bound to a maximal permission policy
//     subject (apis.kcp.io:binding:...); ClusterRoleBindings that bind such
//     a subject or a ClusterRole granting bind or content;
//   - tenancy.kcp.io: ClusterRoles that grant use on workspacetypes, and
//     the ClusterRoleBindings of such ClusterRoles.
//
// A binding's ClusterRole is looked up in the binding's cluster, then in
// system:admin (the bootstrap roles, which change only with a new version:
// the first lists after a restart look at every binding again). Objects of
// system:* clusters are left alone.
type Labeler struct {
	loop                *loop.Loop
	clusterRoles        *wildcardinformer.Informer
	clusterRoleBindings *wildcardinformer.Informer
	// patch sets ReplicateAnnotationKey of an object to value ("" removes
	// it) if the object still has resourceVersion.
	patch func(ctx context.Context, resource string, cluster logicalcluster.Name, name, resourceVersion, value string) error
}

// LabelerConfig is what the labeler needs.
type LabelerConfig struct {
	// ClusterRoles and ClusterRoleBindings are the shard's wildcard
	// informers.
	ClusterRoles, ClusterRoleBindings *wildcardinformer.Informer
	// Client patches: a REST client at the shard's base URL, e.g. a
	// clientset's RbacV1().RESTClient() on the loopback configuration.
	Client rest.Interface
}

// NewLabeler returns a labeler. It registers handlers and an index: call it
// before the informers run.
func NewLabeler(cfg LabelerConfig) (*Labeler, error) {
	clusterRoles, clusterRoleBindings, client := cfg.ClusterRoles, cfg.ClusterRoleBindings, cfg.Client
	if err := clusterRoleBindings.AddIndexers(cache.Indexers{byClusterRole: clusterRoleIndex}); err != nil {
		return nil, err
	}
	l := &Labeler{
		clusterRoles:        clusterRoles,
		clusterRoleBindings: clusterRoleBindings,
		patch: func(ctx context.Context, resource string, cluster logicalcluster.Name, name, resourceVersion, value string) error {
			return patchReplicateAnnotation(ctx, client, resource, cluster, name, resourceVersion, value)
		},
	}
	l.loop = loop.New("replication-labeler", l.reconcile)
	clusterRoles.AddHandler(clusterRoleHandler{l})
	clusterRoleBindings.AddHandler(clusterRoleBindingHandler{l})
	return l, nil
}

// Run runs the workers until ctx is done, once the informers have listed.
func (l *Labeler) Run(ctx context.Context, workers int) {
	if err := wildcardinformer.WaitForSync(ctx, l.clusterRoles, l.clusterRoleBindings); err != nil {
		return
	}
	l.loop.Run(ctx, workers)
}

// clusterRoleHandler enqueues a changed ClusterRole and the bindings of
// it, which are marked by what it grants.
type clusterRoleHandler struct{ l *Labeler }

func (h clusterRoleHandler) enqueue(obj interface{}) {
	key, ok := keyOf(clusterRolesKind, true)(obj)
	if !ok {
		return
	}
	h.l.loop.Enqueue(key)
	_, objKey, _ := strings.Cut(key, keySeparator)
	bindings, _ := h.l.clusterRoleBindings.ByIndex(byClusterRole, objKey)
	for _, b := range bindings {
		if k, ok := keyOf(clusterRoleBindingsKind, true)(b); ok {
			h.l.loop.Enqueue(k)
		}
	}
}

func (h clusterRoleHandler) OnAdd(obj interface{})       { h.enqueue(obj) }
func (h clusterRoleHandler) OnUpdate(_, obj interface{}) { h.enqueue(obj) }
func (h clusterRoleHandler) OnDelete(obj interface{})    { h.enqueue(obj) }

// clusterRoleBindingHandler enqueues a changed binding and its
// ClusterRole, which a maximal permission policy subject marks.
type clusterRoleBindingHandler struct{ l *Labeler }

func (h clusterRoleBindingHandler) enqueue(obj interface{}) {
	key, ok := keyOf(clusterRoleBindingsKind, true)(obj)
	if !ok {
		return
	}
	h.l.loop.Enqueue(key)
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	crb, ok := obj.(*rbacv1.ClusterRoleBinding)
	if !ok {
		return
	}
	if role := referencesClusterRole(crb); role != "" {
		cluster, _ := logicalcluster.ObjectCluster(crb.Annotations)
		h.l.loop.Enqueue(clusterRolesKind + keySeparator + wildcardinformer.Key(cluster, "", role))
	}
}

func (h clusterRoleBindingHandler) OnAdd(obj interface{})       { h.enqueue(obj) }
func (h clusterRoleBindingHandler) OnUpdate(_, obj interface{}) { h.enqueue(obj) }
func (h clusterRoleBindingHandler) OnDelete(obj interface{})    { h.enqueue(obj) }

func (l *Labeler) reconcile(ctx context.Context, key string) error {
	kind, objKey, ok := strings.Cut(key, keySeparator)
	if !ok {
		return nil
	}
	cluster, _, name, ok := wildcardinformer.SplitKey(objKey)
	if !ok || cluster.IsSystem() {
		return nil
	}
	switch kind {
	case clusterRolesKind:
		return l.reconcileClusterRole(ctx, cluster, name)
	case clusterRoleBindingsKind:
		return l.reconcileClusterRoleBinding(ctx, cluster, name)
	}
	return nil
}

func (l *Labeler) reconcileClusterRole(ctx context.Context, cluster logicalcluster.Name, name string) error {
	obj, exists, err := l.clusterRoles.Get(cluster, "", name)
	if err != nil || !exists {
		return err
	}
	cr := obj.(*rbacv1.ClusterRole)
	apis := grantsBindOrContent(cr)
	if !apis {
		bindings, err := l.clusterRoleBindings.ByIndex(byClusterRole, wildcardinformer.Key(cluster, "", name))
		if err != nil {
			return err
		}
		for _, b := range bindings {
			if hasMaximalPermissionSubject(b.(*rbacv1.ClusterRoleBinding)) {
				apis = true
				break
			}
		}
	}
	return l.mark(ctx, clusterRolesKind, cluster, name, cr.ResourceVersion, cr.Annotations[ReplicateAnnotationKey], apis, grantsUse(cr))
}

func (l *Labeler) reconcileClusterRoleBinding(ctx context.Context, cluster logicalcluster.Name, name string) error {
	obj, exists, err := l.clusterRoleBindings.Get(cluster, "", name)
	if err != nil || !exists {
		return err
	}
	crb := obj.(*rbacv1.ClusterRoleBinding)
	apis, tenancy := hasMaximalPermissionSubject(crb), false
	if role := referencesClusterRole(crb); role != "" {
		obj, exists, err := l.clusterRoles.Get(cluster, "", role)
		bootstrap := false
		if err == nil && !exists {
			obj, exists, err = l.clusterRoles.Get(clusterrbac.BootstrapCluster, "", role)
			bootstrap = true
		}
		if err != nil {
			return err
		}
		if exists {
			cr := obj.(*rbacv1.ClusterRole)
			if bootstrap {
				// A binding to a bootstrap role travels only for what the
				// role grants by name: every workspace's owner is bound to
				// cluster-admin, and replicating those would put a replica
				// of every workspace on every shard.
				cr = explicitRules(cr)
			}
			apis = apis || grantsBindOrContent(cr)
			tenancy = grantsUse(cr)
		}
	}
	return l.mark(ctx, clusterRoleBindingsKind, cluster, name, crb.ResourceVersion, crb.Annotations[ReplicateAnnotationKey], apis, tenancy)
}

// mark patches ReplicateAnnotationKey when the groups that want the object
// replicated changed.
func (l *Labeler) mark(ctx context.Context, resource string, cluster logicalcluster.Name, name, resourceVersion, current string, apis, tenancy bool) error {
	value := replicateValue(replicateValue(current, apisGroup, apis), tenancyGroup, tenancy)
	if value == current {
		return nil
	}
	klog.FromContext(ctx).V(2).Info("Marking for replication", "resource", resource, "cluster", cluster, "name", name, "value", value)
	err := l.patch(ctx, resource, cluster, name, resourceVersion, value)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// patchReplicateAnnotation sets (or with value "", removes)
// ReplicateAnnotationKey of a ClusterRole or ClusterRoleBinding of a
// logical cluster, if the object still has resourceVersion.
func patchReplicateAnnotation(ctx context.Context, client rest.Interface, resource string, cluster logicalcluster.Name, name, resourceVersion, value string) error {
	var v interface{}
	if value != "" {
		v = value
	}
	patch, err := json.Marshal(map[string]interface{}{"metadata": map[string]interface{}{
		"resourceVersion": resourceVersion,
		"annotations":     map[string]interface{}{ReplicateAnnotationKey: v},
	}})
	if err != nil {
		return err
	}
	err = client.Patch(types.MergePatchType).AbsPath(cluster.RequestPath(), "apis", rbacv1.GroupName, "v1", resource, name).Body(patch).Do(ctx).Error()
	if err != nil {
		return fmt.Errorf("patch %s %s|%s: %w", resource, cluster, name, err)
	}
	return nil
}
