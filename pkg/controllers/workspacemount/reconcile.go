package workspacemount

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
)

// observe sets the mount condition, the phase and spec.URL of a mounted
// workspace from its mount object (nil: not found), as kcp's mounts
// reconciler and workspace phase reconciler do together.
func observe(ws *tenancyv1alpha1.Workspace, mount *unstructured.Unstructured) {
	ref := ws.Spec.Mount.Reference
	switch phase, found, _ := unstructured.NestedString(objectOrEmpty(mount), "status", "phase"); {
	case mount == nil:
		notReady(ws, tenancyv1alpha1.MountObjectNotFoundReason, fmt.Sprintf("%s %q not found", ref.Kind, namespacedName(ref.Namespace, ref.Name)))
	case !found || tenancyv1alpha1.MountPhaseType(phase) != tenancyv1alpha1.MountPhaseReady:
		notReady(ws, tenancyv1alpha1.MountObjectNotReadyReason, fmt.Sprintf("Mount is not reporting ready. See %s %q status for more details", mount.GetKind(), mount.GetName()))
	default:
		conditionsv1alpha1.Set(ws, conditionsv1alpha1.Condition{Type: tenancyv1alpha1.MountConditionReady, Status: corev1.ConditionTrue})
		ws.Status.Phase = corev1alpha1.LogicalClusterPhaseReady
	}
	if url, found, _ := unstructured.NestedString(objectOrEmpty(mount), "status", "URL"); found && url != "" {
		ws.Spec.URL = url
	}
}

func notReady(ws *tenancyv1alpha1.Workspace, reason, message string) {
	conditionsv1alpha1.Set(ws, conditionsv1alpha1.Condition{
		Type: tenancyv1alpha1.MountConditionReady, Status: corev1.ConditionFalse,
		Severity: conditionsv1alpha1.ConditionSeverityError, Reason: reason, Message: message,
	})
	// kcp: a false Workspace* condition makes the workspace Unavailable,
	// which the front-proxy answers with 503.
	ws.Status.Phase = corev1alpha1.LogicalClusterPhaseUnavailable
}

func objectOrEmpty(u *unstructured.Unstructured) map[string]interface{} {
	if u == nil {
		return nil
	}
	return u.Object
}

func namespacedName(namespace, name string) string {
	if namespace == "" {
		return "/" + name
	}
	return namespace + "/" + name
}

// statusEqual tells whether two workspaces' statuses are equal
// (conditionsv1alpha1.Set keeps the transition time of an unchanged one).
func statusEqual(a, b *tenancyv1alpha1.Workspace) bool {
	return apiequality.Semantic.DeepEqual(a.Status, b.Status)
}
