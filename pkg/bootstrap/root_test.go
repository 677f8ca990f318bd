package bootstrap

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
)

func TestShardLimitFlagsReplaceOnlyTheLimitsTheySet(t *testing.T) {
	workspaces := func(n string) corev1.ResourceList {
		return corev1.ResourceList{corev1alpha1.ResourceWorkspaces: resource.MustParse(n)}
	}
	kubectlSet := &corev1alpha1.ShardResourceLimits{Soft: workspaces("40"), Hard: workspaces("50")}
	if got := (Shard{}).resourceLimits(kubectlSet); got != kubectlSet {
		t.Errorf("no flags: %v, want the limits set with kubectl", got)
	}
	got := Shard{WorkspaceHardLimit: 70}.resourceLimits(kubectlSet)
	if soft, hard := (&corev1alpha1.Shard{Spec: corev1alpha1.ShardSpec{ResourceLimits: got}}).WorkspaceLimits(); soft != 40 || hard != 70 {
		t.Errorf("--shard-workspace-hard-limit=70 over 40/50: %d/%d, want 40/70", soft, hard)
	}
	if hard := kubectlSet.Hard[corev1alpha1.ResourceWorkspaces]; hard.Value() != 50 {
		t.Errorf("the existing limits were changed in place")
	}
	got = Shard{WorkspaceSoftLimit: 5}.resourceLimits(nil)
	if soft, hard := (&corev1alpha1.Shard{Spec: corev1alpha1.ShardSpec{ResourceLimits: got}}).WorkspaceLimits(); soft != 5 || hard != 0 {
		t.Errorf("--shard-workspace-soft-limit=5 alone: %d/%d, want 5/unlimited", soft, hard)
	}
}
