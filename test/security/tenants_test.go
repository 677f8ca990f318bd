package security

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
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

// tenant is a user who is cluster-admin of one workspace and of nothing
// else, and whose objects carry a marker no other tenant ever sends.
type tenant struct {
	user  string
	shard string
	// path and cluster address the tenant's workspace.
	path    logicalcluster.Path
	cluster logicalcluster.Name
	// marker is in the names, labels and data of the tenant's objects.
	marker string
	// saToken is a token of a service account that is cluster-admin of
	// the workspace.
	saToken string
}

// markers are the strings of the tenant that nobody else may see.
func (t *tenant) markers() []string { return []string{t.marker} }

// configMap is the name of the tenant's marked ConfigMap.
func (t *tenant) configMap() string { return t.marker + "-cm" }

var tenants struct {
	once sync.Once
	a, b *tenant
	err  error
}

// twoTenants returns tenant a (user-1, on root) and tenant b (user-2, on
// shard-1), created once for the package.
func twoTenants(t *testing.T) (*tenant, *tenant) {
	t.Helper()
	tenants.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		var wg sync.WaitGroup
		var errA, errB error
		tenants.a, tenants.b = &tenant{user: "user-1", shard: "root"}, &tenant{user: "user-2", shard: "shard-1"}
		wg.Add(2)
		go func() { defer wg.Done(); errA = setUpTenant(ctx, t, tenants.a) }()
		go func() { defer wg.Done(); errB = setUpTenant(ctx, t, tenants.b) }()
		wg.Wait()
		if errA != nil {
			tenants.err = errA
		} else {
			tenants.err = errB
		}
	})
	if tenants.err != nil {
		t.Fatalf("set up tenants: %v", tenants.err)
	}
	return tenants.a, tenants.b
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// setUpTenant creates the tenant's workspace on its shard, makes the user
// and a service account its cluster-admins, and creates the marked
// objects.
func setUpTenant(ctx context.Context, t *testing.T, tn *tenant) error {
	tn.marker = "mk" + randomHex(8)
	name := "sec-" + tn.marker[2:10]
	c, err := kcpclient.New(sys.AdminConfig(t, ""))
	if err != nil {
		return err
	}
	ws := &tenancyv1alpha1.Workspace{
		TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "Workspace"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.WorkspaceSpec{
			Type:     &tenancyv1alpha1.WorkspaceTypeReference{Name: "organization", Path: "root"},
			Location: &tenancyv1alpha1.WorkspaceLocation{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1alpha1.ShardNameLabel: tn.shard}}},
		},
	}
	if err := c.Create(ctx, logicalcluster.Root, workspacesGVR, ws, &tenancyv1alpha1.Workspace{}); err != nil {
		return fmt.Errorf("create workspace %s: %w", name, err)
	}
	var got tenancyv1alpha1.Workspace
	if err := framework.Poll(ctx, 0, func(ctx context.Context) error {
		if err := c.Get(ctx, logicalcluster.Root, workspacesGVR, name, &got); err != nil {
			return err
		}
		if got.Status.Phase != corev1alpha1.LogicalClusterPhaseReady {
			return fmt.Errorf("phase %q", got.Status.Phase)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("workspace %s Ready: %w", name, err)
	}
	tn.path, tn.cluster = logicalcluster.Root.Path().Join(name), logicalcluster.Name(got.Spec.Cluster)
	admin, err := kubernetes.NewForConfig(sys.AdminConfig(t, tn.path.String()))
	if err != nil {
		return err
	}
	sa := tn.marker + "-sa"
	steps := []struct {
		what string
		do   func(context.Context) error
	}{
		{"bind the user", func(ctx context.Context) error {
			_, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, adminBinding("tenant-admin", rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: "User", Name: tn.user}), metav1.CreateOptions{})
			return ignoreExists(err)
		}},
		{"marked namespace", func(ctx context.Context) error {
			_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tn.marker + "-ns", Labels: map[string]string{"tenant-marker": tn.marker}}}, metav1.CreateOptions{})
			return ignoreExists(err)
		}},
		{"marked configmap", func(ctx context.Context) error {
			_, err := admin.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: tn.configMap(), Labels: map[string]string{"tenant-marker": tn.marker, "app": "sec"}},
				Data:       map[string]string{"v": tn.marker + "-data"},
			}, metav1.CreateOptions{})
			return ignoreExists(err)
		}},
		{"more configmaps", func(ctx context.Context) error {
			for i := 0; i < 3; i++ {
				_, err := admin.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-cm-%d", tn.marker, i), Labels: map[string]string{"app": "sec"}},
					Data:       map[string]string{"v": tn.marker},
				}, metav1.CreateOptions{})
				if err := ignoreExists(err); err != nil {
					return err
				}
			}
			return nil
		}},
		{"marked secret", func(ctx context.Context) error {
			_, err := admin.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: tn.marker + "-secret"},
				StringData: map[string]string{"password": tn.marker + "-password"},
			}, metav1.CreateOptions{})
			return ignoreExists(err)
		}},
		{"service account", func(ctx context.Context) error {
			_, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
			return ignoreExists(err)
		}},
		{"bind the service account", func(ctx context.Context) error {
			_, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, adminBinding("sa-admin", rbacv1.Subject{Kind: "ServiceAccount", Name: sa, Namespace: "default"}), metav1.CreateOptions{})
			return ignoreExists(err)
		}},
		{"service account token", func(ctx context.Context) error {
			tr, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{}}, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			tn.saToken = tr.Status.Token
			return nil
		}},
		{"the user reaches the workspace", func(ctx context.Context) error {
			cfg := sys.UserConfig(t, tn.user, tn.path.String())
			c, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			_, err = c.CoreV1().ConfigMaps("default").Get(ctx, tn.configMap(), metav1.GetOptions{})
			return err
		}},
		{"the service account reaches the workspace", func(ctx context.Context) error {
			cfg := rest.AnonymousClientConfig(sys.AdminConfig(t, tn.path.String()))
			cfg.BearerToken = tn.saToken
			c, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			_, err = c.CoreV1().ConfigMaps("default").Get(ctx, tn.configMap(), metav1.GetOptions{})
			return err
		}},
	}
	for _, s := range steps {
		if err := framework.Poll(ctx, 0, s.do); err != nil {
			return fmt.Errorf("%s: %s: %w", tn.user, s.what, err)
		}
	}
	return nil
}

func adminBinding(name string, subject rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{subject},
	}
}

var workspacesGVR = tenancyv1alpha1.SchemeGroupVersion.WithResource("workspaces")
