package e2esystem

import (
	"context"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/system"
	"github.com/shardplane/shardplane/test/framework"
)

// TestTerminatingWorkspaceStaysRoutedThroughTheFrontProxy: a workspace
// whose type has a terminator, on the other shard than its parent, is
// deleted; as in kcp it shows phase Terminating, and the front-proxy keeps
// routing its path while its LogicalCluster exists (its terminator and its
// clients work in it); once the terminator lets go it is gone.
func TestTerminatingWorkspaceStaysRoutedThroughTheFrontProxy(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	admin := kcp(t, sys.AdminConfig(t, ""))
	org := readyWorkspace(ctx, t, "root", uniqueName("term-org"), "organization", "root")
	orgCluster := logicalcluster.Name(org.Spec.Cluster)
	typeName := "with-terminator"
	wt := &tenancyv1alpha1.WorkspaceType{
		TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "WorkspaceType"},
		ObjectMeta: metav1.ObjectMeta{Name: typeName},
		Spec: tenancyv1alpha1.WorkspaceTypeSpec{Terminator: true,
			Extend: tenancyv1alpha1.WorkspaceTypeExtension{With: []tenancyv1alpha1.WorkspaceTypeReference{{Name: "universal", Path: "root"}}}},
	}
	if err := admin.Create(ctx, orgCluster, kcpclient.WorkspaceTypes, wt, &tenancyv1alpha1.WorkspaceType{}); err != nil {
		t.Fatal(err)
	}
	shard := "root"
	if shards > 1 {
		shard = system.ShardName(1)
	}
	ws := &tenancyv1alpha1.Workspace{
		TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "Workspace"},
		ObjectMeta: metav1.ObjectMeta{Name: "doomed"},
		Spec: tenancyv1alpha1.WorkspaceSpec{
			Type:     &tenancyv1alpha1.WorkspaceTypeReference{Name: tenancyv1alpha1.WorkspaceTypeName(typeName), Path: org.Spec.Cluster},
			Location: &tenancyv1alpha1.WorkspaceLocation{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1alpha1.ShardNameLabel: shard}}},
		},
	}
	framework.Eventually(t, func(ctx context.Context) error {
		err := admin.Create(ctx, orgCluster, workspacesGVR, ws, &tenancyv1alpha1.Workspace{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}, "create a workspace of type %s", typeName)
	path := org.Spec.Cluster + ":doomed"
	listNamespaces := func(ctx context.Context) error {
		_, err := kube(t, sys.AdminConfig(t, path)).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		return err
	}
	framework.Eventually(t, listNamespaces, "reach %s through the front-proxy", path)
	got := &tenancyv1alpha1.Workspace{}
	if err := admin.Get(ctx, orgCluster, workspacesGVR, "doomed", got); err != nil {
		t.Fatal(err)
	}
	cluster := logicalcluster.Name(got.Spec.Cluster)

	if err := admin.Delete(ctx, orgCluster, workspacesGVR, "doomed", nil); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		if err := admin.Get(ctx, orgCluster, workspacesGVR, "doomed", got); err != nil {
			return err
		}
		if got.Status.Phase != corev1alpha1.LogicalClusterPhaseTerminating {
			return fmt.Errorf("phase %q", got.Status.Phase)
		}
		return nil
	}, "the deleted workspace is Terminating")
	if err := listNamespaces(ctx); err != nil {
		t.Fatalf("the Terminating workspace's path through the front-proxy: %v", err)
	}

	// kcp-admin lets go in the terminator's place.
	lc := &corev1alpha1.LogicalCluster{}
	if err := admin.Get(ctx, cluster, kcpclient.LogicalClusters, corev1alpha1.LogicalClusterName, lc); err != nil {
		t.Fatal(err)
	}
	if len(lc.Status.Terminators) != 1 {
		t.Fatalf("terminators %v, want the type's", lc.Status.Terminators)
	}
	release := fmt.Sprintf(`[{"op":"test","path":"/status/terminators/0","value":%q},{"op":"remove","path":"/status/terminators/0"}]`, lc.Status.Terminators[0])
	if err := admin.Patch(ctx, cluster, kcpclient.LogicalClusters, corev1alpha1.LogicalClusterName, types.JSONPatchType, []byte(release), nil, "status"); err != nil {
		t.Fatalf("remove the terminator: %v", err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		if err := admin.Get(ctx, orgCluster, workspacesGVR, "doomed", &tenancyv1alpha1.Workspace{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("answered %v", err)
		}
		return nil
	}, "the workspace is gone once its terminator let go")
}
