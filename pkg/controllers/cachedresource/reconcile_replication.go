package cachedresource

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	cachev1alpha1 "github.com/shardplane/shardplane/pkg/apis/cache/v1alpha1"
	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	"github.com/shardplane/shardplane/pkg/controllers/apiexport"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// DefaultIdentitySecretNamespace holds the identity secrets the controller
// creates, as kcp's.
const DefaultIdentitySecretNamespace = "kcp-system"

// identityKey is the data item of an identity secret.
const identityKey = "key"

// recheck is how often a ClusterCachedResource that cannot replicate yet
// (secret or resource missing) looks again: neither is watched.
const recheck = 5 * time.Second

// reconcileReplication sets the identity, checks the resource, runs the
// replicator and counts.
func (c *Controller) reconcileReplication(ctx context.Context, cluster logicalcluster.Name, key string, r *cachev1alpha1.ClusterCachedResource) error {
	if r.Status.Phase == "" {
		r.Status.Phase = cachev1alpha1.ClusterCachedResourcePhaseInitializing
	}
	kube, err := kubernetes.NewForConfig(kcpclient.ClusterConfig(c.cfg.Loopback, cluster))
	if err != nil {
		return err
	}
	hash, err := c.identity(ctx, kube, r)
	if err != nil || hash == "" {
		return err
	}

	gvr, namespaced, err := servedResource(kube, r.Spec.GroupVersionResource)
	if err != nil {
		return err
	}
	switch {
	case gvr.Resource == "":
		setCondition(r, cachev1alpha1.ClusterCachedResourceValid, corev1.ConditionFalse, cachev1alpha1.ClusterCachedResourceValidNoResources,
			fmt.Sprintf("The resource %s is not served in this workspace", schema.GroupVersionResource{Group: r.Spec.Group, Version: r.Spec.Version, Resource: r.Spec.Resource}))
		c.stopReplicator(key)
		return loop.RequeueAfter(recheck)
	case namespaced:
		setCondition(r, cachev1alpha1.ClusterCachedResourceValid, corev1.ConditionFalse, cachev1alpha1.ResourceNotClusterScoped,
			fmt.Sprintf("The resource %s is namespaced; only cluster-scoped resources can be cached", gvr))
		c.stopReplicator(key)
		return loop.RequeueAfter(recheck)
	}
	setCondition(r, cachev1alpha1.ClusterCachedResourceValid, corev1.ConditionTrue, "", "")

	selector := ""
	if r.Spec.LabelSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(r.Spec.LabelSelector)
		if err != nil {
			// Validation refuses such selectors.
			return nil
		}
		selector = s.String()
	}
	rep, err := c.ensureReplicator(cluster, key, r.Name, gvr, selector, hash)
	if err != nil {
		return err
	}
	setCondition(r, cachev1alpha1.ReplicationStarted, corev1.ConditionTrue, cachev1alpha1.ClusterCachedResourceReplicationStarted, "")

	local, synced := rep.local()
	if !synced {
		return loop.RequeueAfter(time.Second)
	}
	copies, err := c.cache.list(ctx, cluster, r.Name)
	if err != nil {
		return fmt.Errorf("count the copies in the cache server: %w", err)
	}
	r.Status.ResourceCounts = &cachev1alpha1.ResourceCount{Local: local, Cache: len(copies)}
	r.Status.Phase = cachev1alpha1.ClusterCachedResourcePhaseReady
	return nil
}

// ensureReplicator returns the replicator of key for these arguments,
// starting one (and stopping one started for others).
func (c *Controller) ensureReplicator(cluster logicalcluster.Name, key, name string, gvr schema.GroupVersionResource, selector, hash string) (*replicator, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.replicators[key]; ok {
		if r.gvr == gvr && r.selector == selector && r.hash == hash {
			return r, nil
		}
		r.stop()
		delete(c.replicators, key)
	}
	if c.runCtx == nil {
		return nil, fmt.Errorf("the controller is not running")
	}
	d, err := dynamic.NewForConfig(kcpclient.ClusterConfig(c.cfg.Loopback, cluster))
	if err != nil {
		return nil, err
	}
	r := startReplicator(c.runCtx, replicatorConfig{
		cluster: cluster, name: name, gvr: gvr, selector: selector, hash: hash,
		source: d.Resource(gvr), cache: c.cache,
		changed: func() { c.loop.EnqueueAfter(key, 100*time.Millisecond) },
	})
	c.replicators[key] = r
	return r, nil
}

// identity sets status.identityHash and IdentityValid from the identity
// secret, creating the default one; "" while there is none.
func (c *Controller) identity(ctx context.Context, kube kubernetes.Interface, r *cachev1alpha1.ClusterCachedResource) (string, error) {
	namespace, name := DefaultIdentitySecretNamespace, r.Name
	if id := r.Spec.Identity; id != nil && id.SecretRef != nil {
		namespace, name = id.SecretRef.Namespace, id.SecretRef.Name
		if namespace == "" {
			namespace = DefaultIdentitySecretNamespace
		}
	}
	isDefault := namespace == DefaultIdentitySecretNamespace && name == r.Name
	secret, err := kube.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && isDefault {
		secret, err = createIdentitySecret(ctx, kube, namespace, name)
		if err != nil {
			setCondition(r, cachev1alpha1.ClusterCachedResourceIdentityValid, corev1.ConditionFalse, cachev1alpha1.IdentityGenerationFailedReason,
				fmt.Sprintf("Creating the identity secret %s/%s failed: %v", namespace, name, err))
			return "", err
		}
	}
	if apierrors.IsNotFound(err) {
		setCondition(r, cachev1alpha1.ClusterCachedResourceIdentityValid, corev1.ConditionFalse, cachev1alpha1.IdentityVerificationFailedReason,
			fmt.Sprintf("The identity secret %s/%s does not exist; create it with the identity in data key %q, or remove spec.identity to use a generated one", namespace, name, identityKey))
		return "", loop.RequeueAfter(recheck)
	}
	if err != nil {
		return "", fmt.Errorf("get identity secret %s/%s: %w", namespace, name, err)
	}
	keyData := secret.Data[identityKey]
	if len(keyData) == 0 {
		setCondition(r, cachev1alpha1.ClusterCachedResourceIdentityValid, corev1.ConditionFalse, cachev1alpha1.IdentityVerificationFailedReason,
			fmt.Sprintf("The identity secret %s/%s has no data key %q", namespace, name, identityKey))
		return "", loop.RequeueAfter(recheck)
	}
	hash := apiexport.IdentityHash(keyData)
	if r.Status.IdentityHash != "" && r.Status.IdentityHash != hash {
		setCondition(r, cachev1alpha1.ClusterCachedResourceIdentityValid, corev1.ConditionFalse, cachev1alpha1.IdentityVerificationFailedReason,
			fmt.Sprintf("The key in secret %s/%s does not match status.identityHash: the identity never changes", namespace, name))
		return "", loop.RequeueAfter(recheck)
	}
	r.Status.IdentityHash = hash
	setCondition(r, cachev1alpha1.ClusterCachedResourceIdentityValid, corev1.ConditionTrue, "", "")
	return hash, nil
}

// createIdentitySecret creates the default identity secret (and its
// namespace) with a random key; one that appeared meanwhile wins.
func createIdentitySecret(ctx context.Context, kube kubernetes.Interface, namespace, name string) (*corev1.Secret, error) {
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	key, err := apiexport.NewIdentityKey()
	if err != nil {
		return nil, err
	}
	secret, err := kube.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{identityKey: []byte(key)},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return kube.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	return secret, err
}

// servedResource finds the resource in the workspace's discovery, in the
// spec's version or the group's preferred one: the empty resource when it
// is not served.
func servedResource(kube kubernetes.Interface, spec cachev1alpha1.GroupVersionResource) (schema.GroupVersionResource, bool, error) {
	version := spec.Version
	if version == "" {
		groups, err := kube.Discovery().ServerGroups()
		if err != nil {
			return schema.GroupVersionResource{}, false, fmt.Errorf("discovery: %w", err)
		}
		for _, g := range groups.Groups {
			if g.Name == spec.Group {
				version = g.PreferredVersion.Version
			}
		}
		if version == "" {
			return schema.GroupVersionResource{}, false, nil
		}
	}
	gv := schema.GroupVersion{Group: spec.Group, Version: version}
	resources, err := kube.Discovery().ServerResourcesForGroupVersion(gv.String())
	if apierrors.IsNotFound(err) {
		return schema.GroupVersionResource{}, false, nil
	}
	if err != nil {
		return schema.GroupVersionResource{}, false, fmt.Errorf("discovery of %s: %w", gv, err)
	}
	for _, res := range resources.APIResources {
		if res.Name == spec.Resource {
			return gv.WithResource(res.Name), res.Namespaced, nil
		}
	}
	return schema.GroupVersionResource{}, false, nil
}

func setCondition(r *cachev1alpha1.ClusterCachedResource, t conditionsv1alpha1.ConditionType, status corev1.ConditionStatus, reason, message string) {
	c := conditionsv1alpha1.Condition{Type: t, Status: status, Reason: reason, Message: message}
	if status == corev1.ConditionFalse {
		c.Severity = conditionsv1alpha1.ConditionSeverityError
	}
	conditionsv1alpha1.Set(r, c)
}
