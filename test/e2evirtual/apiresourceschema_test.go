package e2evirtual

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/scope"
	"github.com/shardplane/shardplane/pkg/system"
	"github.com/shardplane/shardplane/pkg/virtual/viewurl"
	"github.com/shardplane/shardplane/test/framework"
)

// TestAPIResourceSchemaView performs and asserts what kcp's
// test/e2e/virtual/apiresourceschema tests do (Discovery, Access,
// ReadOnly, MultipleBindings, Authorization), on one set of workspaces
// spread over both shards. kcp's tests reach the root shard's view
// directly as system:masters (its service account too); here a
// consumer's view is its shard's server, reached through the
// front-proxy's /shards/<shard>/ route as kcp-admin (the front-proxy
// strips system:masters): only the consumer's shard knows its bindings,
// in kcp too.
func TestAPIResourceSchemaView(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	kcp := kcpClient(t, sys.AdminConfig(t, ""))

	// Three providers, one on the other shard than the rest; consumer A
	// (shard-1) binds all three, consumer B (root) only the first.
	providerShards := []string{"root", system.ShardName(1), "root"}
	providers := make([]logicalcluster.Name, len(providerShards))
	groups := make([]string, len(providerShards))
	schemaNames := make([]string, len(providerShards))
	for i, shard := range providerShards {
		providers[i] = organization(ctx, t, fmt.Sprintf("schema-provider%d", i+1), shard)
		groups[i] = fmt.Sprintf("%s.provider%d.test", rand.String(5), i+1)
		schemaNames[i] = exportSheriffs(ctx, t, kcp, providers[i], groups[i])
	}
	a := organization(ctx, t, "schema-consumer-a", system.ShardName(1))
	b := organization(ctx, t, "schema-consumer-b", "root")
	for i := range providers {
		bindExport(ctx, t, kcp, a, providers[i], groups[i])
	}
	bindExport(ctx, t, kcp, b, providers[0], groups[0])

	admin := sys.AdminConfig(t, "")
	viewA := schemaView(t, admin, system.ShardName(1), a)
	viewB := schemaView(t, admin, "root", b)

	t.Run("Discovery", func(t *testing.T) {
		for _, view := range []*rest.Config{viewA, viewB} {
			_, lists, err := discovery.NewDiscoveryClientForConfigOrDie(view).ServerGroupsAndResources()
			if err != nil {
				t.Fatalf("discovery at %s: %v", view.Host, err)
			}
			found := false
			for _, list := range lists {
				if list.GroupVersion != apisv1alpha1.SchemeGroupVersion.String() {
					continue
				}
				for _, r := range list.APIResources {
					if r.Name != "apiresourceschemas" {
						continue
					}
					found = true
					verbs := sets.New(r.Verbs...)
					if !verbs.HasAll("get", "list", "watch") || verbs.HasAny("create", "update", "delete") {
						t.Errorf("verbs %v at %s: want get, list, watch and no create, update, delete", r.Verbs, view.Host)
					}
				}
			}
			if !found {
				t.Errorf("no apiresourceschemas in the discovery at %s: %v", view.Host, lists)
			}
		}
	})

	t.Run("AccessAndMultipleBindings", func(t *testing.T) {
		vc := kcpClient(t, viewA)
		expected := sets.New(schemaNames...)
		framework.Eventually(t, func(ctx context.Context) error {
			actual, err := listSchemas(ctx, vc, a)
			if err != nil {
				return err
			}
			// There may be more, from bindings every workspace has.
			if !actual.IsSuperset(expected) {
				return fmt.Errorf("schemas %v, want a superset of %v", sets.List(actual), sets.List(expected))
			}
			return nil
		}, "all bound schemas through the view of A")
		for name := range expected {
			got := &apisv1alpha1.APIResourceSchema{}
			if err := vc.Get(ctx, a, kcpclient.APIResourceSchemas, name, got); err != nil || got.Name != name {
				t.Fatalf("get %s through the view: %v (%q)", name, err, got.Name)
			}
		}
		err := vc.Get(ctx, a, kcpclient.APIResourceSchemas, "non-existent-schema", &apisv1alpha1.APIResourceSchema{})
		if !apierrors.IsNotFound(err) {
			t.Fatalf("get of a schema not bound: want NotFound, got %v", err)
		}
		// Beyond kcp's test: B sees only what it binds.
		got, err := listSchemas(ctx, kcpClient(t, viewB), b)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Has(schemaNames[0]) || got.Has(schemaNames[1]) || got.Has(schemaNames[2]) {
			t.Errorf("schemas of B %v: want %s and neither of A's other two", sets.List(got), schemaNames[0])
		}
	})

	t.Run("ReadOnly", func(t *testing.T) {
		vc := kcpClient(t, viewB)
		schema := &apisv1alpha1.APIResourceSchema{}
		framework.Eventually(t, func(ctx context.Context) error {
			return vc.Get(ctx, b, kcpclient.APIResourceSchemas, schemaNames[0], schema)
		}, "get the schema through the view of B")
		refused := func(err error) bool { return apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err) }
		create := &apisv1alpha1.APIResourceSchema{
			TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha1.SchemeGroupVersion.String(), Kind: "APIResourceSchema"},
			ObjectMeta: metav1.ObjectMeta{Name: "test.new.schema"},
			Spec:       apisv1alpha1.APIResourceSchemaSpec{Group: "test.kcp.io", Names: schema.Spec.Names, Scope: schema.Spec.Scope},
		}
		if err := vc.Create(ctx, b, kcpclient.APIResourceSchemas, create, &apisv1alpha1.APIResourceSchema{}); !refused(err) {
			t.Errorf("create through the view: want Forbidden or MethodNotSupported, got %v", err)
		}
		update := schema.DeepCopy()
		update.APIVersion, update.Kind = apisv1alpha1.SchemeGroupVersion.String(), "APIResourceSchema"
		if update.Annotations == nil {
			update.Annotations = map[string]string{}
		}
		update.Annotations["test"] = "value"
		if err := vc.Update(ctx, b, kcpclient.APIResourceSchemas, update.Name, update, &apisv1alpha1.APIResourceSchema{}); !refused(err) {
			t.Errorf("update through the view: want Forbidden or MethodNotSupported, got %v", err)
		}
		if err := vc.Delete(ctx, b, kcpclient.APIResourceSchemas, schema.Name, nil); !refused(err) {
			t.Errorf("delete through the view: want Forbidden or MethodNotSupported, got %v", err)
		}
	})

	t.Run("Authorization", func(t *testing.T) {
		// A service account of the first provider's workspace (root)
		// reads the schemas of A (shard-1) through A's shard's view.
		providerKube := kubeClient(t, sys.AdminConfig(t, string(providers[0])))
		sa, err := providerKube.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{GenerateName: "provider-operator-"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create a service account in the provider's workspace: %v", err)
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
		saConfig := rest.AnonymousClientConfig(sys.AdminConfig(t, ""))
		saConfig.BearerToken = token
		vc := kcpClient(t, schemaView(t, saConfig, system.ShardName(1), a))

		_, err = listSchemas(ctx, vc, a)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "user needs permission to read apibindings") {
			t.Fatalf("list without permission to read apibindings: want Forbidden for want of apibindings, got %v", err)
		}
		// kcp's global name of the service account, as RBAC names it.
		global := scope.GlobalServiceAccountName(providers[0], "system:serviceaccount:default:"+sa.Name)
		framework.Grant(ctx, t, kubeClient(t, sys.AdminConfig(t, string(a))), "apibinding-reader", global,
			// Workspace access, required for a foreign service account.
			rbacv1.PolicyRule{NonResourceURLs: []string{"/"}, Verbs: []string{"access"}},
			rbacv1.PolicyRule{APIGroups: []string{apisv1alpha2.SchemeGroupVersion.Group}, Resources: []string{"apibindings"}, Verbs: []string{"get", "list", "watch"}},
		)
		framework.Eventually(t, func(ctx context.Context) error {
			got, err := listSchemas(ctx, vc, a)
			if err != nil {
				return err
			}
			if !got.Has(schemaNames[0]) {
				return fmt.Errorf("schemas %v, want %s among them", sets.List(got), schemaNames[0])
			}
			return nil
		}, "the provider's service account lists the schemas of A after the grant")
		got := &apisv1alpha1.APIResourceSchema{}
		if err := vc.Get(ctx, a, kcpclient.APIResourceSchemas, schemaNames[0], got); err != nil || got.Name != schemaNames[0] {
			t.Fatalf("the provider's service account gets %s: %v", schemaNames[0], err)
		}
	})
}

// schemaView returns cfg at the view of consumer on its shard's server,
// through the front-proxy.
func schemaView(t *testing.T, cfg *rest.Config, shard string, consumer logicalcluster.Name) *rest.Config {
	t.Helper()
	out := rest.CopyConfig(cfg)
	out.Host = viewurl.URL(sys.URL(t)+viewurl.ShardsPrefix+shard, viewurl.APIResourceSchemaView, string(consumer))
	return out
}

// listSchemas lists the names of the schemas through a view; clients add
// /clusters/<consumer>, as kcp's cluster-aware client does.
func listSchemas(ctx context.Context, c *kcpclient.Client, consumer logicalcluster.Name) (sets.Set[string], error) {
	list := &apisv1alpha1.APIResourceSchemaList{}
	if err := c.List(ctx, consumer, kcpclient.APIResourceSchemas, list); err != nil {
		return nil, err
	}
	out := sets.New[string]()
	for _, s := range list.Items {
		out.Insert(s.Name)
	}
	return out, nil
}

// exportSheriffs creates the schema of sheriffs in group and an APIExport
// of it named group, as kcp's apifixtures.CreateSheriffsSchemaAndExport;
// it returns the schema's name.
func exportSheriffs(ctx context.Context, t *testing.T, c *kcpclient.Client, cluster logicalcluster.Name, group string) string {
	t.Helper()
	s := &apisv1alpha1.APIResourceSchema{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha1.SchemeGroupVersion.String(), Kind: "APIResourceSchema"},
		ObjectMeta: metav1.ObjectMeta{Name: "today.sheriffs." + group},
		Spec: apisv1alpha1.APIResourceSchemaSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "sheriffs", Singular: "sheriff", Kind: "Sheriff", ListKind: "SheriffList"},
			Scope: apiextensionsv1.ClusterScoped,
			Versions: []apisv1alpha1.APIResourceVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: runtime.RawExtension{Raw: []byte(`{"type":"object","x-kubernetes-preserve-unknown-fields":true}`)},
			}},
		},
	}
	if err := c.Create(ctx, cluster, schemasGVR, s, &apisv1alpha1.APIResourceSchema{}); err != nil {
		t.Fatalf("create APIResourceSchema %s: %v", s.Name, err)
	}
	e := &apisv1alpha2.APIExport{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport"},
		ObjectMeta: metav1.ObjectMeta{Name: group},
		Spec: apisv1alpha2.APIExportSpec{Resources: []apisv1alpha2.ResourceSchema{{
			Group: group, Name: "sheriffs", Schema: s.Name, Storage: apisv1alpha2.ResourceSchemaStorage{CRD: &apisv1alpha2.ResourceSchemaStorageCRD{}},
		}}},
	}
	if err := c.Create(ctx, cluster, exportsGVR, e, &apisv1alpha2.APIExport{}); err != nil {
		t.Fatalf("create APIExport %s: %v", group, err)
	}
	return s.Name
}

// bindExport binds an export in cluster with a binding of the export's
// name and waits until it is bound.
func bindExport(ctx context.Context, t *testing.T, c *kcpclient.Client, cluster, exportCluster logicalcluster.Name, export string) {
	t.Helper()
	b := &apisv1alpha2.APIBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: export},
		Spec:       apisv1alpha2.APIBindingSpec{Reference: apisv1alpha2.BindingReference{Export: &apisv1alpha2.ExportBindingReference{Path: string(exportCluster), Name: export}}},
	}
	framework.Eventually(t, func(ctx context.Context) error {
		err := c.Create(ctx, cluster, bindingsGVR, b, &apisv1alpha2.APIBinding{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}, "create APIBinding %s in %s", export, string(cluster))
	framework.Eventually(t, func(ctx context.Context) error {
		got := &apisv1alpha2.APIBinding{}
		if err := c.Get(ctx, cluster, bindingsGVR, export, got); err != nil {
			return err
		}
		if got.Status.Phase != apisv1alpha2.APIBindingPhaseBound {
			return fmt.Errorf("phase %q, conditions %+v", got.Status.Phase, got.Status.Conditions)
		}
		return nil
	}, "APIBinding %s in %s bound", export, string(cluster))
}
