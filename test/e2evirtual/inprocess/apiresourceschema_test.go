package inprocess

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/scope"
	"github.com/shardplane/shardplane/pkg/virtual/viewurl"
	"github.com/shardplane/shardplane/test/framework"
)

// TestShardServesTheAPIResourceSchemaViewInProcess is kcp's
// TestAPIResourceSchemaVirtualWorkspaceAuthorization in kcp's own setup:
// the view on the shard's port, a service account of the provider's
// workspace with its token. Without permission it is refused; once the
// consumer grants workspace access and reading apibindings to the account's
// global name (system:kcp:serviceaccount:<cluster>:<namespace>:<name>), it
// lists and gets the consumer's bound schema.
func TestShardServesTheAPIResourceSchemaViewInProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kcp, err := kcpclient.New(shard.ClientConfig(t, "base"))
	if err != nil {
		t.Fatal(err)
	}
	provider := logicalcluster.Name(shard.NewLogicalCluster(t, "schema-provider"))
	consumer := logicalcluster.Name(shard.NewLogicalCluster(t, "schema-consumer"))

	const group = "authtest.example.io"
	s := &apisv1alpha1.APIResourceSchema{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha1.SchemeGroupVersion.String(), Kind: "APIResourceSchema"},
		ObjectMeta: metav1.ObjectMeta{Name: "today.sheriffs." + group},
		Spec: apisv1alpha1.APIResourceSchemaSpec{
			Group: group, Scope: apiextensionsv1.ClusterScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "sheriffs", Singular: "sheriff", Kind: "Sheriff", ListKind: "SheriffList"},
			Versions: []apisv1alpha1.APIResourceVersion{{Name: "v1", Served: true, Storage: true,
				Schema: runtime.RawExtension{Raw: []byte(`{"type":"object","x-kubernetes-preserve-unknown-fields":true}`)}}},
		},
	}
	if err := kcp.Create(ctx, provider, schemasGVR, s, &apisv1alpha1.APIResourceSchema{}); err != nil {
		t.Fatal(err)
	}
	e := &apisv1alpha2.APIExport{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport"},
		ObjectMeta: metav1.ObjectMeta{Name: group},
		Spec: apisv1alpha2.APIExportSpec{Resources: []apisv1alpha2.ResourceSchema{{Group: group, Name: "sheriffs", Schema: s.Name,
			Storage: apisv1alpha2.ResourceSchemaStorage{CRD: &apisv1alpha2.ResourceSchemaStorageCRD{}}}}},
	}
	if err := kcp.Create(ctx, provider, exportsGVR, e, &apisv1alpha2.APIExport{}); err != nil {
		t.Fatal(err)
	}
	b := &apisv1alpha2.APIBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: group},
		Spec:       apisv1alpha2.APIBindingSpec{Reference: apisv1alpha2.BindingReference{Export: &apisv1alpha2.ExportBindingReference{Path: string(provider), Name: group}}},
	}
	if err := kcp.Create(ctx, consumer, bindingsGVR, b, &apisv1alpha2.APIBinding{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		got := &apisv1alpha2.APIBinding{}
		if err := kcp.Get(ctx, consumer, bindingsGVR, group, got); err != nil {
			return err
		}
		if got.Status.Phase != apisv1alpha2.APIBindingPhaseBound {
			return fmt.Errorf("phase %q", got.Status.Phase)
		}
		return nil
	}, "the consumer's binding is bound")

	// The provider's operator: a service account of the provider's
	// workspace.
	providerKube := kubernetes.NewForConfigOrDie(shard.ClusterConfig(t, "base", string(provider)))
	sa, err := providerKube.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{GenerateName: "provider-operator-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var token string
	framework.Eventually(t, func(ctx context.Context) error {
		tr, err := providerKube.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if token = tr.Status.Token; token == "" {
			return errors.New("empty token")
		}
		return nil
	}, "token of %s", sa.Name)
	view := rest.AnonymousClientConfig(shard.ClientConfig(t, "base"))
	view.BearerToken = token
	view.Host = viewurl.URL(shard.BaseURL(t), viewurl.APIResourceSchemaView, string(consumer))
	saView, err := kcpclient.New(view)
	if err != nil {
		t.Fatal(err)
	}
	list := &apisv1alpha1.APIResourceSchemaList{}
	if err := saView.List(ctx, consumer, kcpclient.APIResourceSchemas, list); !apierrors.IsForbidden(err) {
		t.Fatalf("the provider's service account without permission: want Forbidden, got %v", err)
	}

	global := scope.GlobalServiceAccountName(provider, "system:serviceaccount:default:"+sa.Name)
	framework.Grant(ctx, t, kubernetes.NewForConfigOrDie(shard.ClusterConfig(t, "base", string(consumer))), "apibinding-reader", global,
		// Workspace access, required for a foreign service account.
		rbacv1.PolicyRule{NonResourceURLs: []string{"/"}, Verbs: []string{"access"}},
		rbacv1.PolicyRule{APIGroups: []string{apisv1alpha2.SchemeGroupVersion.Group}, Resources: []string{"apibindings"}, Verbs: []string{"get", "list", "watch"}},
	)
	framework.Eventually(t, func(ctx context.Context) error {
		list := &apisv1alpha1.APIResourceSchemaList{}
		if err := saView.List(ctx, consumer, kcpclient.APIResourceSchemas, list); err != nil {
			return err
		}
		for _, item := range list.Items {
			if item.Name == s.Name {
				return nil
			}
		}
		return fmt.Errorf("schema %s not among %d listed", s.Name, len(list.Items))
	}, "the provider's service account lists the consumer's schemas after the grant")
	got := &apisv1alpha1.APIResourceSchema{}
	if err := saView.Get(ctx, consumer, kcpclient.APIResourceSchemas, s.Name, got); err != nil || got.Name != s.Name {
		t.Fatalf("the provider's service account gets %s: %v", s.Name, err)
	}
}
