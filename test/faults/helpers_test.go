package faults

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/test/framework"
)

var workspacesGVR = tenancyv1alpha1.SchemeGroupVersion.WithResource("workspaces")

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func kube(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	return framework.KubeClient(t, cfg)
}

var nameCounter struct {
	sync.Mutex
	n int
}

func uniqueName(prefix string) string {
	nameCounter.Lock()
	defer nameCounter.Unlock()
	nameCounter.n++
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1000000, nameCounter.n)
}

// tenantWorkspace creates an organization below root on shard, waits for
// it to be Ready and reachable through the front-proxy, and makes user
// its cluster-admin. It returns the workspace's path.
func tenantWorkspace(ctx context.Context, t *testing.T, shard, user string) (logicalcluster.Path, logicalcluster.Name) {
	t.Helper()
	c, err := kcpclient.New(sys.AdminConfig(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	name := uniqueName("faults")
	ws := &tenancyv1alpha1.Workspace{
		TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "Workspace"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.WorkspaceSpec{
			Type:     &tenancyv1alpha1.WorkspaceTypeReference{Name: "organization", Path: "root"},
			Location: &tenancyv1alpha1.WorkspaceLocation{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1alpha1.ShardNameLabel: shard}}},
		},
	}
	if err := c.Create(ctx, logicalcluster.Root, workspacesGVR, ws, &tenancyv1alpha1.Workspace{}); err != nil {
		t.Fatalf("create workspace %s: %v", name, err)
	}
	var got tenancyv1alpha1.Workspace
	framework.Eventually(t, func(ctx context.Context) error {
		if err := c.Get(ctx, logicalcluster.Root, workspacesGVR, name, &got); err != nil {
			return err
		}
		if got.Status.Phase != corev1alpha1.LogicalClusterPhaseReady {
			return fmt.Errorf("phase %q", got.Status.Phase)
		}
		return nil
	}, "workspace %s Ready", name)
	path := logicalcluster.Root.Path().Join(name)
	admin := kube(t, sys.AdminConfig(t, path.String()))
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "tenant-admin"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}, "bind %s in %s", user, name)
	userClient := kube(t, sys.UserConfig(t, user, path.String()))
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := userClient.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		return err
	}, "%s reaches %s", user, name)
	return path, logicalcluster.Name(got.Spec.Cluster)
}
