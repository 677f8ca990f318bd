package workspacetype

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/virtual/viewurl"
)

// virtualWorkspacesReconciler lists in status.virtualWorkspaces, for every
// shard, the URLs of the views of the type's initializer and terminator:
// <shard's virtual workspace URL>/services/initializingworkspaces/<initializer>
// (terminatingworkspaces/<terminator>), the virtual workspace URL being the
// shard's spec.virtualWorkspaceURL, or its baseURL when unset.
type virtualWorkspacesReconciler struct {
	listShards func() ([]*corev1alpha1.Shard, error)
}

func (r virtualWorkspacesReconciler) reconcile(wt *tenancyv1alpha1.WorkspaceType) {
	shards, err := r.listShards()
	if err == nil && len(shards) == 0 {
		err = fmt.Errorf("no shards are known yet")
	}
	if err != nil {
		conditionsv1alpha1.Set(wt, conditionsv1alpha1.Condition{
			Type: tenancyv1alpha1.WorkspaceTypeVirtualWorkspaceURLsReady, Status: corev1.ConditionFalse,
			Severity: conditionsv1alpha1.ConditionSeverityWarning, Reason: tenancyv1alpha1.ErrorGeneratingURLsReason,
			Message: fmt.Sprintf("listing the shards: %v", err),
		})
		return
	}
	sort.Slice(shards, func(i, j int) bool { return shards[i].Name < shards[j].Name })
	var urls []tenancyv1alpha1.VirtualWorkspace
	for _, s := range shards {
		base := viewurl.ShardServerURL(s)
		if wt.Spec.Initializer {
			urls = append(urls, tenancyv1alpha1.VirtualWorkspace{
				URL:  viewurl.URL(base, viewurl.InitializingView, string(tenancyv1alpha1.InitializerForType(wt))),
				Type: tenancyv1alpha1.VirtualWorkspaceTypeInitializing,
			})
		}
		if wt.Spec.Terminator {
			urls = append(urls, tenancyv1alpha1.VirtualWorkspace{
				URL:  viewurl.URL(base, viewurl.TerminatingView, string(tenancyv1alpha1.TerminatorForType(wt))),
				Type: tenancyv1alpha1.VirtualWorkspaceTypeTerminating,
			})
		}
	}
	wt.Status.VirtualWorkspaces = urls
	conditionsv1alpha1.Set(wt, conditionsv1alpha1.Condition{Type: tenancyv1alpha1.WorkspaceTypeVirtualWorkspaceURLsReady, Status: corev1.ConditionTrue})
}
