package resourcequota

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	quotav1 "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/quota"
)

// usage computes a quota's status as upstream's syncResourceQuota does:
// status.hard is spec.hard, status.used counts what the quota limits in its
// namespace, in the quota's own cluster.
type usage struct {
	// list returns the objects of a resource in a namespace of a cluster,
	// or in all of it for ns "" (none when the cluster does not serve the
	// resource, or it is cluster-scoped and ns is not "").
	list         func(ctx context.Context, cluster logicalcluster.Name, gr schema.GroupResource, ns string) ([]runtime.Object, error)
	updateStatus func(ctx context.Context, cluster logicalcluster.Name, q *corev1.ResourceQuota) error
}

func (u *usage) reconcile(ctx context.Context, cluster logicalcluster.Name, q *corev1.ResourceQuota) error {
	var evaluators []quotav1.Evaluator
	for _, gr := range quota.CountedResources(q.Spec.Hard) {
		evaluators = append(evaluators, quota.CountEvaluator(gr, func(ns string) ([]runtime.Object, error) {
			return u.list(ctx, cluster, gr, ns)
		}))
	}

	dirty := !apiequality.Semantic.DeepEqual(q.Spec.Hard, q.Status.Hard) || q.Status.Hard == nil || q.Status.Used == nil
	used := corev1.ResourceList{}
	if q.Status.Used != nil {
		used = quotav1.Add(corev1.ResourceList{}, q.Status.Used)
	}
	hard := quotav1.Add(corev1.ResourceList{}, q.Spec.Hard)
	var errs []error
	ns := q.Namespace
	if quota.IsClusterScoped(q) {
		ns = "" // all namespaces and the cluster-scoped objects
	}
	observed, err := quotav1.CalculateUsage(ns, q.Spec.Scopes, hard, generic.NewRegistry(evaluators), q.Spec.ScopeSelector)
	if err != nil {
		// Keep what could be counted; report the rest.
		errs = append(errs, err)
	}
	for name, v := range observed {
		used[name] = v
	}
	used = quotav1.Mask(used, quotav1.ResourceNames(hard))
	dirty = dirty || !quotav1.Equals(used, q.Status.Used)
	if !dirty {
		return utilerrors.NewAggregate(errs)
	}
	updated := q.DeepCopy()
	updated.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: used}
	if err := u.updateStatus(ctx, cluster, updated); err != nil {
		return err
	}
	return utilerrors.NewAggregate(errs)
}
