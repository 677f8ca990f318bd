package e2evirtual

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/test/framework"
)

var (
	workspacesGVR = tenancyv1alpha1.SchemeGroupVersion.WithResource("workspaces")
	schemasGVR    = apisv1alpha1.SchemeGroupVersion.WithResource("apiresourceschemas")
	slicesGVR     = apisv1alpha1.SchemeGroupVersion.WithResource("apiexportendpointslices")
	exportsGVR    = apisv1alpha2.SchemeGroupVersion.WithResource("apiexports")
	bindingsGVR   = apisv1alpha2.SchemeGroupVersion.WithResource("apibindings")
)

func kcpClient(t *testing.T, cfg *rest.Config) *kcpclient.Client {
	return framework.KCPClient(t, cfg)
}

func kubeClient(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	return framework.KubeClient(t, cfg)
}

// organization creates an organization workspace below root on a shard
// and waits until it is Ready; it returns its logical cluster.
func organization(ctx context.Context, t *testing.T, prefix, shard string) logicalcluster.Name {
	t.Helper()
	return workspaceOfType(ctx, t, logicalcluster.Root, prefix+"-"+rand.String(5), &tenancyv1alpha1.WorkspaceTypeReference{Name: "organization", Path: "root"}, shard)
}

// exportWidgets creates the schema of widgets.example.io and an APIExport
// of it that claims configmaps.
func exportWidgets(ctx context.Context, t *testing.T, c *kcpclient.Client, cluster logicalcluster.Name, name string) {
	t.Helper()
	s := &apisv1alpha1.APIResourceSchema{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha1.SchemeGroupVersion.String(), Kind: "APIResourceSchema"},
		ObjectMeta: metav1.ObjectMeta{Name: "v1.widgets.example.io"},
		Spec: apisv1alpha1.APIResourceSchemaSpec{
			Group: "example.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apisv1alpha1.APIResourceVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: runtime.RawExtension{Raw: []byte(`{"type":"object","properties":{"spec":{"type":"object","properties":{"size":{"type":"integer"}}}}}`)},
			}},
		},
	}
	if err := c.Create(ctx, cluster, schemasGVR, s, &apisv1alpha1.APIResourceSchema{}); err != nil {
		t.Fatalf("create APIResourceSchema: %v", err)
	}
	e := &apisv1alpha2.APIExport{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: apisv1alpha2.APIExportSpec{
			Resources:        []apisv1alpha2.ResourceSchema{{Group: "example.io", Name: "widgets", Schema: s.Name, Storage: apisv1alpha2.ResourceSchemaStorage{CRD: &apisv1alpha2.ResourceSchemaStorageCRD{}}}},
			PermissionClaims: []apisv1alpha2.PermissionClaim{configMapsClaim},
		},
	}
	if err := c.Create(ctx, cluster, exportsGVR, e, &apisv1alpha2.APIExport{}); err != nil {
		t.Fatalf("create APIExport: %v", err)
	}
}

var configMapsClaim = apisv1alpha2.PermissionClaim{GroupResource: apisv1alpha2.GroupResource{Resource: "configmaps"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}

// bind binds the export in a workspace and waits until it is bound.
func bind(ctx context.Context, t *testing.T, c *kcpclient.Client, cluster, exportCluster logicalcluster.Name, export string) {
	t.Helper()
	b := &apisv1alpha2.APIBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: "widgets"},
		Spec:       apisv1alpha2.APIBindingSpec{Reference: apisv1alpha2.BindingReference{Export: &apisv1alpha2.ExportBindingReference{Path: string(exportCluster), Name: export}}},
	}
	if err := c.Create(ctx, cluster, bindingsGVR, b, &apisv1alpha2.APIBinding{}); err != nil {
		t.Fatalf("create APIBinding in %s: %v", cluster, err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		got := &apisv1alpha2.APIBinding{}
		if err := c.Get(ctx, cluster, bindingsGVR, "widgets", got); err != nil {
			return err
		}
		if got.Status.Phase != apisv1alpha2.APIBindingPhaseBound {
			return fmt.Errorf("phase %q, conditions %+v", got.Status.Phase, got.Status.Conditions)
		}
		return nil
	}, "APIBinding in %s bound", string(cluster))
}

// namespace creates a namespace in the workspace of kc.
func namespace(ctx context.Context, t *testing.T, kc kubernetes.Interface, name string) {
	t.Helper()
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil && strings.Contains(err.Error(), "already exists") {
			return nil
		}
		return err
	}, "create namespace %s", name)
}

// withCluster returns cfg with its host at <endpoint>/clusters/<cluster>.
func withCluster(cfg *rest.Config, endpoint string, cluster logicalcluster.Name) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Host = cluster.Path().URL(endpoint)
	return out
}
