package e2esystem

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/system"
	"github.com/shardplane/shardplane/test/framework"
)

// clusterNameExtra is kcp's extra of a service account's logical cluster.
const clusterNameExtra = "authentication.kcp.io/cluster-name"

var (
	schemasGVR  = apisv1alpha1.SchemeGroupVersion.WithResource("apiresourceschemas")
	exportsGVR  = apisv1alpha2.SchemeGroupVersion.WithResource("apiexports")
	bindingsGVR = apisv1alpha2.SchemeGroupVersion.WithResource("apibindings")
)

// TestServiceAccountOfAnotherShardAuthenticatesEverywhere is kcp's
// TestServiceAccount (test/e2e/apibinding/cross_workspace_auth_test.go) on
// two shards, through the front-proxy: the service account of a consumer
// workspace on one shard authenticates in workspaces of the other shard
// (403 where it may not enter, never 401), binds a provider's export there
// once the provider grants bind to system:cluster:<consumer>, and an
// in-cluster request (no /clusters/) with its token is served in its own
// workspace.
func TestServiceAccountOfAnotherShardAuthenticatesEverywhere(t *testing.T) {
	if shards < 2 {
		t.Skip("needs two shards")
	}
	ctx := testContext(t)
	consumer := readyWorkspace(ctx, t, "root", uniqueName("sa-consumer"), "organization", system.ShardName(1))
	provider := readyWorkspace(ctx, t, "root", uniqueName("sa-provider"), "organization", "root")
	consumerCluster := logicalcluster.Name(consumer.Spec.Cluster)
	providerCluster := logicalcluster.Name(provider.Spec.Cluster)

	consumerAdmin := kube(t, sys.AdminConfig(t, consumer.Spec.Cluster))
	if _, err := consumerAdmin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var token string
	framework.Eventually(t, func(ctx context.Context) error {
		tr, err := consumerAdmin.CoreV1().ServiceAccounts("team").CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if token = tr.Status.Token; token == "" {
			return errors.New("empty token")
		}
		return nil
	}, "a token of team/default in the consumer")
	as := func(cluster string) *rest.Config {
		cfg := rest.AnonymousClientConfig(sys.AdminConfig(t, cluster))
		cfg.BearerToken = token
		return cfg
	}

	// Who it is: in its workspace (its shard) and in root (the other).
	for _, cluster := range []string{consumer.Spec.Cluster, "root"} {
		review, err := kube(t, as(cluster)).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("whoami in %s with the consumer's service account: %v", cluster, err)
		}
		if u := review.Status.UserInfo; u.Username != "system:serviceaccount:team:default" || !slices.Equal(u.Extra[clusterNameExtra], []string{consumer.Spec.Cluster}) {
			t.Errorf("whoami in %s: %q extra %v, want the service account of %s", cluster, u.Username, u.Extra, consumer.Spec.Cluster)
		}
	}
	_, err := kube(t, as(provider.Spec.Cluster)).CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("the consumer's service account in the provider (other shard): want 403, got %v", err)
	}

	// The provider's export, bindable by the consumer's identities.
	admin := kcp(t, sys.AdminConfig(t, ""))
	schema := &apisv1alpha1.APIResourceSchema{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha1.SchemeGroupVersion.String(), Kind: "APIResourceSchema"},
		ObjectMeta: metav1.ObjectMeta{Name: "today.widgets.example.io"},
		Spec: apisv1alpha1.APIResourceSchemaSpec{
			Group: "example.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apisv1alpha1.APIResourceVersion{{Name: "v1", Served: true, Storage: true,
				Schema: runtime.RawExtension{Raw: []byte(`{"type":"object","x-kubernetes-preserve-unknown-fields":true}`)}}},
		},
	}
	if err := admin.Create(ctx, providerCluster, schemasGVR, schema, &apisv1alpha1.APIResourceSchema{}); err != nil {
		t.Fatalf("create APIResourceSchema: %v", err)
	}
	export := &apisv1alpha2.APIExport{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport"},
		ObjectMeta: metav1.ObjectMeta{Name: "today-widgets"},
		Spec:       apisv1alpha2.APIExportSpec{Resources: []apisv1alpha2.ResourceSchema{{Name: "widgets", Group: "example.io", Schema: schema.Name}}},
	}
	if err := admin.Create(ctx, providerCluster, exportsGVR, export, &apisv1alpha2.APIExport{}); err != nil {
		t.Fatalf("create APIExport: %v", err)
	}
	group := func(name string) rbacv1.Subject {
		return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: name}
	}
	framework.GrantTo(ctx, t, kube(t, sys.AdminConfig(t, provider.Spec.Cluster)), "bind-apiexport", group("system:cluster:"+consumer.Spec.Cluster),
		rbacv1.PolicyRule{Verbs: []string{"bind"}, APIGroups: []string{apisv1alpha2.SchemeGroupVersion.Group}, Resources: []string{"apiexports"}, ResourceNames: []string{export.Name}})
	framework.GrantTo(ctx, t, consumerAdmin, "manage-apibindings", group("system:authenticated"),
		rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{apisv1alpha2.SchemeGroupVersion.Group}, Resources: []string{"apibindings"}},
		rbacv1.PolicyRule{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}})

	sa := kcp(t, as(""))
	binding := &apisv1alpha2.APIBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: "today-widgets"},
		Spec:       apisv1alpha2.APIBindingSpec{Reference: apisv1alpha2.BindingReference{Export: &apisv1alpha2.ExportBindingReference{Path: provider.Spec.Cluster, Name: export.Name}}},
	}
	framework.Eventually(t, func(ctx context.Context) error {
		return sa.Create(ctx, consumerCluster, bindingsGVR, binding, &apisv1alpha2.APIBinding{})
	}, "the consumer's service account binds the provider's export")
	framework.Eventually(t, func(ctx context.Context) error {
		got := &apisv1alpha2.APIBinding{}
		if err := admin.Get(ctx, consumerCluster, bindingsGVR, binding.Name, got); err != nil {
			return err
		}
		if got.Status.Phase != apisv1alpha2.APIBindingPhaseBound {
			return fmt.Errorf("phase %q", got.Status.Phase)
		}
		return nil
	}, "the binding is Bound")

	// In-cluster: the front-proxy's URL without /clusters/.
	framework.GrantTo(ctx, t, consumerAdmin, "team-view", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "team", Name: "default"}, rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"serviceaccounts"}})
	inCluster := as("")
	inCluster.Host = strings.TrimSuffix(sys.URL(t), "/")
	framework.Eventually(t, func(ctx context.Context) error {
		list, err := kube(t, inCluster).CoreV1().ServiceAccounts("team").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) != 1 || list.Items[0].Annotations["kcp.io/cluster"] != consumer.Spec.Cluster {
			return fmt.Errorf("service accounts %+v, want team/default of %s", list.Items, consumer.Spec.Cluster)
		}
		return nil
	}, "an in-cluster list through the front-proxy is served in the token's workspace")
}
