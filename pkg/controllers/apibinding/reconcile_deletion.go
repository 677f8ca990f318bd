package apibinding

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// deletionReconciler deletes the objects of a deleted binding's resources
// in its workspace, then lets the binding go by removing its finalizer.
type deletionReconciler struct {
	// deleteInstances deletes the objects of a bound resource in a cluster
	// and returns how many remain.
	deleteInstances func(ctx context.Context, cluster logicalcluster.Name, group, resource string) (int, error)
	// updateStatus writes the binding's status.
	updateStatus func(ctx context.Context, cluster logicalcluster.Name, b *apisv1alpha2.APIBinding) error
	// update writes the binding (its finalizers).
	update func(ctx context.Context, cluster logicalcluster.Name, b *apisv1alpha2.APIBinding) error
}

// reconcile works on b, a binding of cluster being deleted.
func (r *deletionReconciler) reconcile(ctx context.Context, cluster logicalcluster.Name, b *apisv1alpha2.APIBinding) error {
	if !slices.Contains(b.Finalizers, apisv1alpha2.APIBindingFinalizer) {
		return nil
	}
	remaining := map[string]int{}
	var errs []error
	for _, br := range b.Status.BoundResources {
		if r.deleteInstances == nil {
			break
		}
		n, err := r.deleteInstances(ctx, cluster, br.Group, br.Resource)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", groupResource(br.Group, br.Resource), err))
		}
		if n > 0 {
			remaining[groupResource(br.Group, br.Resource)] = n
		}
	}
	if deleteErr := utilerrors.NewAggregate(errs); deleteErr != nil || len(remaining) > 0 {
		msg := ""
		if deleteErr != nil {
			msg = "Deleting the objects of the bound resources failed: " + deleteErr.Error()
		} else {
			var left []string
			for gr, n := range remaining {
				left = append(left, fmt.Sprintf("%d %s", n, gr))
			}
			slices.Sort(left)
			msg = "Waiting for objects to be deleted (finalizers of their own may hold them): " + strings.Join(left, ", ")
		}
		b = b.DeepCopy()
		setFalse(b, apisv1alpha2.BindingResourceDeleteSuccess, "ResourceDeletionPending", conditionsv1alpha1.ConditionSeverityInfo, msg)
		if err := r.updateStatus(ctx, cluster, b); err != nil {
			return err
		}
		if deleteErr != nil {
			return deleteErr
		}
		return loop.RequeueAfter(2 * time.Second)
	}
	b = b.DeepCopy()
	conditionsv1alpha1.Set(b, conditionsv1alpha1.Condition{Type: apisv1alpha2.BindingResourceDeleteSuccess, Status: corev1.ConditionTrue})
	b.Finalizers = slices.DeleteFunc(b.Finalizers, func(f string) bool { return f == apisv1alpha2.APIBindingFinalizer })
	return r.update(ctx, cluster, b)
}
