// Package inprocess tests the virtual workspaces a shard serves itself, as
// `make run` has them: one shard, no virtual-workspaces process, the views
// below /services/ on the shard's own port.
package inprocess

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/test/framework"
)

var shard *framework.Shard

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	defer framework.RemoveBinary()
	var err error
	shard, err = framework.Start(framework.WithTokenUsers(framework.KCPTestTokenUsers()...))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = shard.Close() }()
	return m.Run()
}

var (
	schemasGVR  = apisv1alpha1.SchemeGroupVersion.WithResource("apiresourceschemas")
	exportsGVR  = apisv1alpha2.SchemeGroupVersion.WithResource("apiexports")
	bindingsGVR = apisv1alpha2.SchemeGroupVersion.WithResource("apibindings")
	slicesGVR   = apisv1alpha1.SchemeGroupVersion.WithResource("apiexportendpointslices")
	gizmosGVR   = schema.GroupVersionResource{Group: "example.io", Version: "v1", Resource: "gizmos"}
)

// TestShardServesTheAPIExportViewInProcess: on a shard alone, the
// endpoint slice names the shard itself, and the provider lists the
// export's objects of two workspaces through it.
func TestShardServesTheAPIExportViewInProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	admin := shard.ClientConfig(t, "base")
	kcp, err := kcpclient.New(admin)
	if err != nil {
		t.Fatal(err)
	}
	provider := logicalcluster.Name(shard.NewLogicalCluster(t, "provider"))
	consumers := []logicalcluster.Name{logicalcluster.Name(shard.NewLogicalCluster(t, "b")), logicalcluster.Name(shard.NewLogicalCluster(t, "c"))}

	s := &apisv1alpha1.APIResourceSchema{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha1.SchemeGroupVersion.String(), Kind: "APIResourceSchema"},
		ObjectMeta: metav1.ObjectMeta{Name: "v1.gizmos.example.io"},
		Spec: apisv1alpha1.APIResourceSchemaSpec{
			Group: "example.io", Scope: apiextensionsv1.ClusterScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gizmos", Singular: "gizmo", Kind: "Gizmo", ListKind: "GizmoList"},
			Versions: []apisv1alpha1.APIResourceVersion{{Name: "v1", Served: true, Storage: true,
				Schema: runtime.RawExtension{Raw: []byte(`{"type":"object","x-kubernetes-preserve-unknown-fields":true}`)}}},
		},
	}
	if err := kcp.Create(ctx, provider, schemasGVR, s, &apisv1alpha1.APIResourceSchema{}); err != nil {
		t.Fatal(err)
	}
	const export = "gizmos"
	e := &apisv1alpha2.APIExport{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport"},
		ObjectMeta: metav1.ObjectMeta{Name: export},
		Spec:       apisv1alpha2.APIExportSpec{Resources: []apisv1alpha2.ResourceSchema{{Group: "example.io", Name: "gizmos", Schema: s.Name, Storage: apisv1alpha2.ResourceSchemaStorage{CRD: &apisv1alpha2.ResourceSchemaStorageCRD{}}}}},
	}
	if err := kcp.Create(ctx, provider, exportsGVR, e, &apisv1alpha2.APIExport{}); err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(shard.ClusterConfig(t, "base", string(provider)))
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "gizmo-provider"}, Rules: []rbacv1.PolicyRule{
		{Verbs: []string{"access"}, NonResourceURLs: []string{"/"}},
		{Verbs: []string{"list", "watch", "get"}, APIGroups: []string{"apis.kcp.io"}, Resources: []string{"apiexports/content"}, ResourceNames: []string{export}},
	}}
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "gizmo-provider"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "user-1"}}}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, c := range consumers {
		b := &apisv1alpha2.APIBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: "gizmos"},
			Spec:       apisv1alpha2.APIBindingSpec{Reference: apisv1alpha2.BindingReference{Export: &apisv1alpha2.ExportBindingReference{Path: string(provider), Name: export}}},
		}
		if err := kcp.Create(ctx, c, bindingsGVR, b, &apisv1alpha2.APIBinding{}); err != nil {
			t.Fatal(err)
		}
		dyn := dynamic.NewForConfigOrDie(shard.ClusterConfig(t, "base", string(c)))
		gizmo := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "example.io/v1", "kind": "Gizmo", "metadata": map[string]interface{}{"name": fmt.Sprintf("g%d", i)}}}
		framework.Eventually(t, func(ctx context.Context) error {
			_, err := dyn.Resource(gizmosGVR).Create(ctx, gizmo, metav1.CreateOptions{})
			return err
		}, "create a gizmo in %s", string(c))
	}

	// The export's default endpoint slice, of its name, lists the views.
	want := strings.TrimSuffix(shard.BaseURL(t), "/") + "/services/apiexport/" + string(provider) + "/" + export
	var endpoint string
	framework.Eventually(t, func(ctx context.Context) error {
		got := &apisv1alpha1.APIExportEndpointSlice{}
		if err := kcp.Get(ctx, provider, slicesGVR, "gizmos", got); err != nil {
			return err
		}
		if len(got.Status.APIExportEndpoints) != 1 || got.Status.APIExportEndpoints[0].URL != want {
			return fmt.Errorf("endpoints %+v, want %s", got.Status.APIExportEndpoints, want)
		}
		endpoint = got.Status.APIExportEndpoints[0].URL
		return nil
	}, "the endpoint slice names the shard")

	user := shard.TokenUserConfig(t, "user-1", "")
	view := rest.CopyConfig(user)
	view.Host = logicalcluster.Wildcard.Path().URL(endpoint)
	list, err := dynamic.NewForConfigOrDie(view).Resource(gizmosGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("provider lists gizmos through the in-process view: %v", err)
	}
	var got []string
	for _, item := range list.Items {
		cluster, _ := logicalcluster.ObjectCluster(item.GetAnnotations())
		got = append(got, string(cluster)+"/"+item.GetName())
	}
	sort.Strings(got)
	wantItems := []string{string(consumers[0]) + "/g0", string(consumers[1]) + "/g1"}
	sort.Strings(wantItems)
	if strings.Join(got, ",") != strings.Join(wantItems, ",") {
		t.Fatalf("gizmos through the view %v, want %v", got, wantItems)
	}
	// user-2 has no apiexports/content.
	other := rest.CopyConfig(shard.TokenUserConfig(t, "user-2", ""))
	other.Host = view.Host
	if _, err := dynamic.NewForConfigOrDie(other).Resource(gizmosGVR).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("user-2 through the view: want 403, got %v", err)
	} else if want := fmt.Sprintf(`User "user-2" cannot list resource "gizmos" in API group "example.io" at the cluster scope: API export: %q, workspace: %q RBAC decision:`, export, provider); !strings.Contains(err.Error(), want) {
		// kcp's view words its denial so.
		t.Errorf("denial %q, want kcp's %q", err.Error(), want)
	}
	// Writes need a verb the provider lacks.
	inB := rest.CopyConfig(user)
	inB.Host = consumers[0].Path().URL(endpoint)
	if err := dynamic.NewForConfigOrDie(inB).Resource(gizmosGVR).Delete(ctx, "g0", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("delete without the delete verb on apiexports/content: want 403, got %v", err)
	}
}
