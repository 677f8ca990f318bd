package logicalcluster

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	corev1alpha1 "github.com/kplane-dev/kplane/pkg/apis/core/v1alpha1"
	"github.com/kplane-dev/kplane/pkg/controllers/namespace"
	"github.com/kplane-dev/kplane/pkg/kcpclient"
	"github.com/kplane-dev/kplane/pkg/logicalcluster"
)

// rbacGroup's content is deleted last, so that whoever deletes a workspace
// keeps their permissions inside it until nothing else is left.
const rbacGroup = "rbac.authorization.k8s.io"

// reconcileDeletion deletes every namespace, then every other cluster-scoped
// object, then RBAC, then releases the LogicalCluster.
func (c *Controller) reconcileDeletion(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) error {
	if !hasFinalizer(lc, corev1alpha1.LogicalClusterDeletionFinalizer) {
		return nil
	}
	if lc.Status.Phase != corev1alpha1.LogicalClusterPhaseDeleting {
		lc.Status.Phase = corev1alpha1.LogicalClusterPhaseDeleting
		updated := &corev1alpha1.LogicalCluster{}
		lc.APIVersion, lc.Kind = corev1alpha1.SchemeGroupVersion.String(), "LogicalCluster"
		if err := c.kcp.Update(ctx, cluster, kcpclient.LogicalClusters, lc.Name, lc, updated, "status"); err != nil {
			return err
		}
		lc = updated
	}
	cfg := namespace.ClusterConfig(c.base, cluster)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	// Namespaces first: the namespace controller empties and finalizes them.
	nss, err := c.namespaces.List(cluster, "")
	if err != nil {
		return err
	}
	if len(nss) > 0 {
		background := metav1.DeletePropagationBackground
		list, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, ns := range list.Items {
			if ns.DeletionTimestamp != nil {
				continue
			}
			if err := client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{PropagationPolicy: &background}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		if len(list.Items) > 0 {
			return requeueSoon
		}
	}
	remaining, err := c.deleteClusterScoped(ctx, cluster, false)
	if err != nil || remaining {
		if err == nil {
			err = requeueSoon
		}
		return err
	}
	if remaining, err = c.deleteClusterScoped(ctx, cluster, true); err != nil || remaining {
		if err == nil {
			err = requeueSoon
		}
		return err
	}
	lc.Finalizers = removeString(lc.Finalizers, corev1alpha1.LogicalClusterDeletionFinalizer)
	lc.APIVersion, lc.Kind = corev1alpha1.SchemeGroupVersion.String(), "LogicalCluster"
	err = c.kcp.Update(ctx, cluster, kcpclient.LogicalClusters, lc.Name, lc, &corev1alpha1.LogicalCluster{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// deleteClusterScoped deletes all cluster-scoped objects of the cluster
// except namespaces and the LogicalCluster itself: RBAC only when rbac is
// true, everything else otherwise. It reports whether objects remain.
func (c *Controller) deleteClusterScoped(ctx context.Context, cluster logicalcluster.Name, rbac bool) (bool, error) {
	cfg := namespace.ClusterConfig(c.base, cluster)
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return false, err
	}
	lists, err := disco.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return false, fmt.Errorf("discover resources of %s: %w", cluster, err)
	}
	remaining := false
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		if (gv.Group == rbacGroup) != rbac {
			continue
		}
		for _, r := range list.APIResources {
			if r.Namespaced || strings.Contains(r.Name, "/") || !hasVerbs(r.Verbs, "list", "delete") {
				continue
			}
			gvr := gv.WithResource(r.Name)
			if gvr.GroupResource() == (schema.GroupResource{Resource: "namespaces"}) || gvr.GroupResource() == corev1alpha1.Resource("logicalclusters") {
				continue
			}
			objs, err := meta.Resource(gvr).List(ctx, metav1.ListOptions{})
			if err != nil {
				if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
					continue
				}
				return false, err
			}
			for _, o := range objs.Items {
				// Objects without finalizers are gone when DELETE returns;
				// only finalizers make us wait.
				if len(o.Finalizers) > 0 {
					remaining = true
				}
				if o.DeletionTimestamp != nil {
					continue
				}
				if err := meta.Resource(gvr).Delete(ctx, o.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					return false, err
				}
			}
		}
	}
	return remaining, nil
}

func hasVerbs(verbs metav1.Verbs, want ...string) bool {
	for _, w := range want {
		found := false
		for _, v := range verbs {
			if v == w {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func hasFinalizer(lc *corev1alpha1.LogicalCluster, f string) bool {
	for _, x := range lc.Finalizers {
		if x == f {
			return true
		}
	}
	return false
}

func removeString(list []string, s string) []string {
	out := list[:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}
