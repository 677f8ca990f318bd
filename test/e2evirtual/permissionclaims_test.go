package e2evirtual

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/permissionclaim"
	"github.com/shardplane/shardplane/pkg/system"
	"github.com/shardplane/shardplane/test/framework"
)

// The fixtures of kcp's permission claim tests: sheriffs of the
// "wild.wild.west" export, cowboys of the "today-cowboys" export that
// claims them and core resources.
var (
	sheriffsGVR = schema.GroupVersionResource{Group: "wild.wild.west", Version: "v1", Resource: "sheriffs"}
	cowboysGVR  = schema.GroupVersionResource{Group: "wildwest.dev", Version: "v1alpha1", Resource: "cowboys"}
	allVerbs    = []string{"*"}
)

// createSchemaAndExport creates an APIResourceSchema of one resource and an
// APIExport of it with claims, and returns the export's identity hash.
func createSchemaAndExport(ctx context.Context, t *testing.T, c *kcpclient.Client, cluster logicalcluster.Name, export, schemaName string, gvr schema.GroupVersionResource, kind string, scope apiextensionsv1.ResourceScope, claims []apisv1alpha2.PermissionClaim) string {
	t.Helper()
	s := &apisv1alpha1.APIResourceSchema{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha1.SchemeGroupVersion.String(), Kind: "APIResourceSchema"},
		ObjectMeta: metav1.ObjectMeta{Name: schemaName},
		Spec: apisv1alpha1.APIResourceSchemaSpec{
			Group: gvr.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: gvr.Resource, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"},
			Scope: scope,
			Versions: []apisv1alpha1.APIResourceVersion{{
				Name: gvr.Version, Served: true, Storage: true,
				Schema: runtime.RawExtension{Raw: []byte(`{"type":"object","x-kubernetes-preserve-unknown-fields":true}`)},
			}},
		},
	}
	// Two exports of one provider may share a schema.
	if err := c.Create(ctx, cluster, schemasGVR, s, &apisv1alpha1.APIResourceSchema{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create APIResourceSchema %s: %v", schemaName, err)
	}
	e := &apisv1alpha2.APIExport{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport"},
		ObjectMeta: metav1.ObjectMeta{Name: export},
		Spec: apisv1alpha2.APIExportSpec{
			Resources:        []apisv1alpha2.ResourceSchema{{Group: gvr.Group, Name: gvr.Resource, Schema: schemaName, Storage: apisv1alpha2.ResourceSchemaStorage{CRD: &apisv1alpha2.ResourceSchemaStorageCRD{}}}},
			PermissionClaims: claims,
		},
	}
	if err := c.Create(ctx, cluster, exportsGVR, e, &apisv1alpha2.APIExport{}); err != nil {
		t.Fatalf("create APIExport %s: %v", export, err)
	}
	var identity string
	framework.Eventually(t, func(ctx context.Context) error {
		got := &apisv1alpha2.APIExport{}
		if err := c.Get(ctx, cluster, exportsGVR, export, got); err != nil {
			return err
		}
		if !got.Status.Conditions.IsTrue(apisv1alpha2.APIExportIdentityValid) || got.Status.IdentityHash == "" {
			return fmt.Errorf("identity not valid: %+v", got.Status.Conditions)
		}
		identity = got.Status.IdentityHash
		return nil
	}, "APIExport %s has a valid identity", export)
	return identity
}

// createSheriffsExport is kcp's apifixtures.CreateSheriffsSchemaAndExport.
func createSheriffsExport(ctx context.Context, t *testing.T, c *kcpclient.Client, cluster logicalcluster.Name, prefix string) string {
	return createSchemaAndExport(ctx, t, c, cluster, "wild.wild.west", prefix+".sheriffs.wild.wild.west", sheriffsGVR, "Sheriff", apiextensionsv1.ClusterScoped, nil)
}

func createCowboysExport(ctx context.Context, t *testing.T, c *kcpclient.Client, cluster logicalcluster.Name, claims []apisv1alpha2.PermissionClaim) {
	createSchemaAndExport(ctx, t, c, cluster, "today-cowboys", "today.cowboys.wildwest.dev", cowboysGVR, "Cowboy", apiextensionsv1.NamespaceScoped, claims)
}

// createBinding creates an APIBinding and waits until it is bound.
func createBinding(ctx context.Context, t *testing.T, c *kcpclient.Client, cluster logicalcluster.Name, name string, exportCluster logicalcluster.Name, export string, claims []apisv1alpha2.AcceptablePermissionClaim) {
	t.Helper()
	b := &apisv1alpha2.APIBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: apisv1alpha2.APIBindingSpec{
			Reference:        apisv1alpha2.BindingReference{Export: &apisv1alpha2.ExportBindingReference{Path: string(exportCluster), Name: export}},
			PermissionClaims: claims,
		},
	}
	if err := c.Create(ctx, cluster, bindingsGVR, b, &apisv1alpha2.APIBinding{}); err != nil {
		t.Fatalf("create APIBinding %s in %s: %v", name, cluster, err)
	}
	eventuallyBinding(t, c, cluster, name, "bound", func(b *apisv1alpha2.APIBinding) error {
		if !b.Status.Conditions.IsTrue(apisv1alpha2.InitialBindingCompleted) {
			return fmt.Errorf("conditions %+v", b.Status.Conditions)
		}
		return nil
	})
}

// eventuallyBinding polls an APIBinding until check passes.
func eventuallyBinding(t *testing.T, c *kcpclient.Client, cluster logicalcluster.Name, name, what string, check func(*apisv1alpha2.APIBinding) error) *apisv1alpha2.APIBinding {
	t.Helper()
	got := &apisv1alpha2.APIBinding{}
	framework.Eventually(t, func(ctx context.Context) error {
		got = &apisv1alpha2.APIBinding{}
		if err := c.Get(ctx, cluster, bindingsGVR, name, got); err != nil {
			return err
		}
		return check(got)
	}, "APIBinding %s in %s %s", name, string(cluster), what)
	return got
}

// hasCondition checks a condition's status and, if given, its reason.
func hasCondition(t conditionsv1alpha1.ConditionType, status corev1.ConditionStatus, reason string) func(*apisv1alpha2.APIBinding) error {
	return func(b *apisv1alpha2.APIBinding) error {
		c := b.Status.Conditions.Get(t)
		if c == nil || c.Status != status || (reason != "" && c.Reason != reason) {
			return fmt.Errorf("%s is %+v, want %s %s", t, c, status, reason)
		}
		return nil
	}
}

// updateBinding changes an APIBinding, retrying on conflicts.
func updateBinding(t *testing.T, c *kcpclient.Client, cluster logicalcluster.Name, name string, change func(*apisv1alpha2.APIBinding)) {
	t.Helper()
	framework.Eventually(t, func(ctx context.Context) error {
		b := &apisv1alpha2.APIBinding{}
		if err := c.Get(ctx, cluster, bindingsGVR, name, b); err != nil {
			return err
		}
		change(b)
		b.APIVersion, b.Kind = apisv1alpha2.SchemeGroupVersion.String(), "APIBinding"
		return c.Update(ctx, cluster, bindingsGVR, name, b, &apisv1alpha2.APIBinding{})
	}, "update APIBinding %s in %s", name, string(cluster))
}

func coreClaim(resource string) apisv1alpha2.PermissionClaim {
	return apisv1alpha2.PermissionClaim{GroupResource: apisv1alpha2.GroupResource{Resource: resource}, Verbs: allVerbs}
}

func groupClaim(group, resource, identity string) apisv1alpha2.PermissionClaim {
	return apisv1alpha2.PermissionClaim{GroupResource: apisv1alpha2.GroupResource{Group: group, Resource: resource}, IdentityHash: identity, Verbs: allVerbs}
}

// makePermissionClaims are the claims of kcp's apibinding permission claim
// tests.
func makePermissionClaims(identity string) []apisv1alpha2.PermissionClaim {
	return []apisv1alpha2.PermissionClaim{
		coreClaim("configmaps"), coreClaim("secrets"), coreClaim("serviceaccounts"),
		groupClaim("wild.wild.west", "sheriffs", identity),
		groupClaim(authorizationv1.GroupName, "subjectaccessreviews", ""),
		groupClaim(authorizationv1.GroupName, "localsubjectaccessreviews", ""),
	}
}

// acceptAll accepts claims for all objects.
func acceptAll(claims []apisv1alpha2.PermissionClaim) []apisv1alpha2.AcceptablePermissionClaim {
	out := make([]apisv1alpha2.AcceptablePermissionClaim, 0, len(claims))
	for _, c := range claims {
		out = append(out, apisv1alpha2.AcceptablePermissionClaim{
			ScopedPermissionClaim: apisv1alpha2.ScopedPermissionClaim{PermissionClaim: c, Selector: apisv1alpha2.PermissionClaimSelector{MatchAll: true}},
			State:                 apisv1alpha2.ClaimAccepted,
		})
	}
	return out
}

// TestAPIBindingPermissionClaimsConditions is kcp's test of the same name
// (test/e2e/apibinding/apibinding_permissionclaims_test.go), with the
// consumer on the second shard and the provider on root: a binding that
// accepts a claim under a wrong identity is admitted and reported
// invalid; corrected, its claims are valid and applied. Then, as kcp's
// TestAPIBindingPermissionClaimsAppliedAcrossShards, a consumer that binds
// only the claiming export gets its claims applied although nothing on its
// shard binds the claimed resource.
func TestAPIBindingPermissionClaimsConditions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	kcp := kcpClient(t, sys.AdminConfig(t, ""))
	provider := organization(ctx, t, "claims-provider", "root")
	consumer := organization(ctx, t, "claims-consumer", system.ShardName(1))

	identity := createSheriffsExport(ctx, t, kcp, provider, "board-the-wanderer")
	createBinding(ctx, t, kcp, consumer, "wild.wild.west", provider, "wild.wild.west", nil)
	createCowboysExport(ctx, t, kcp, provider, makePermissionClaims(identity))

	t.Log("A binding accepting the sheriffs claim under an invalid identity is admitted")
	createBinding(ctx, t, kcp, consumer, "cowboys", provider, "today-cowboys", acceptAll(makePermissionClaims("xxxxxxx")))
	eventuallyBinding(t, kcp, consumer, "cowboys", "has invalid claims",
		hasCondition(apisv1alpha2.PermissionClaimsValid, corev1.ConditionFalse, apisv1alpha2.InvalidPermissionClaimsReason))

	t.Log("With the right identity the claims are valid and applied")
	updateBinding(t, kcp, consumer, "cowboys", func(b *apisv1alpha2.APIBinding) {
		b.Spec.PermissionClaims = acceptAll(makePermissionClaims(identity))
	})
	b := eventuallyBinding(t, kcp, consumer, "cowboys", "has valid claims", hasCondition(apisv1alpha2.PermissionClaimsValid, corev1.ConditionTrue, ""))
	if !apiequality.Semantic.DeepEqual(b.Status.ExportPermissionClaims, makePermissionClaims(identity)) {
		t.Fatalf("status.exportPermissionClaims %+v, want %+v", b.Status.ExportPermissionClaims, makePermissionClaims(identity))
	}
	eventuallyBinding(t, kcp, consumer, "cowboys", "has its claims applied", hasCondition(apisv1alpha2.PermissionClaimsApplied, corev1.ConditionTrue, ""))

	t.Log("A consumer binding only the claiming export gets the sheriffs claim applied")
	onlyCowboys := organization(ctx, t, "claims-only-cowboys", system.ShardName(1))
	sheriffs := []apisv1alpha2.PermissionClaim{groupClaim("wild.wild.west", "sheriffs", identity)}
	createSchemaAndExport(ctx, t, kcp, provider, "claims-sheriffs", "today.cowboys.wildwest.dev", cowboysGVR, "Cowboy", apiextensionsv1.NamespaceScoped, sheriffs)
	createBinding(ctx, t, kcp, onlyCowboys, "cowboys", provider, "claims-sheriffs", acceptAll(sheriffs))
	eventuallyBinding(t, kcp, onlyCowboys, "cowboys", "has its claims applied", func(b *apisv1alpha2.APIBinding) error {
		if err := hasCondition(apisv1alpha2.PermissionClaimsApplied, corev1.ConditionTrue, "")(b); err != nil {
			return err
		}
		if len(b.Status.AppliedPermissionClaims) != 1 || b.Status.AppliedPermissionClaims[0].IdentityHash != identity {
			return fmt.Errorf("applied %+v", b.Status.AppliedPermissionClaims)
		}
		return nil
	})
}

// listNames lists a resource (all namespaces) and returns the sorted names.
func listNames(ctx context.Context, c dynamic.Interface, gvr schema.GroupVersionResource) ([]string, error) {
	list, err := c.Resource(gvr).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	names := []string{}
	for _, it := range list.Items {
		names = append(names, it.GetName())
	}
	sort.Strings(names)
	return names, nil
}

func createSheriff(ctx context.Context, t *testing.T, cluster logicalcluster.Name, name string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(sheriffsGVR.GroupVersion().String())
	u.SetKind("Sheriff")
	u.SetName(name)
	dyn := dynamic.NewForConfigOrDie(sys.AdminConfig(t, string(cluster)))
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := dyn.Resource(sheriffsGVR).Create(ctx, u, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}, "create sheriff %s in %s", name, string(cluster))
}

// TestAPIExportPermissionClaims is kcp's test of the same name
// (test/e2e/virtual/apiexport/virtualworkspace_test.go), with the first
// consumer on the second shard, read through that shard's endpoint of the
// export's endpoint slice on the front-proxy. Beyond kcp's test, it checks
// that the claimed objects carry the claim label in the consumer workspace
// and lose it when the claim is revoked.
func TestAPIExportPermissionClaims(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	kcp := kcpClient(t, sys.AdminConfig(t, ""))
	claimer := organization(ctx, t, "claimer", "root")
	sheriffProvider := organization(ctx, t, "sheriff-provider", "root")
	unused := organization(ctx, t, "provider-unused", "root")
	consumer1 := organization(ctx, t, "consumer1", system.ShardName(1))
	consumer2 := organization(ctx, t, "consumer2", system.ShardName(1))

	identity := createSheriffsExport(ctx, t, kcp, sheriffProvider, "board-the-wanderer")
	// An extra export of sheriffs, to make sure the claimed identity is used.
	createSheriffsExport(ctx, t, kcp, unused, "use-the-giant-spider")

	createBinding(ctx, t, kcp, consumer1, "wild.wild.west", sheriffProvider, "wild.wild.west", nil)
	createSheriff(ctx, t, consumer1, "in-vw-before")
	createBinding(ctx, t, kcp, consumer2, "wild.wild.west", sheriffProvider, "wild.wild.west", nil)
	createSheriff(ctx, t, consumer2, "not-in-vw")

	claims := []apisv1alpha2.PermissionClaim{
		coreClaim("configmaps"), coreClaim("secrets"), coreClaim("serviceaccounts"),
		groupClaim("rbac.authorization.k8s.io", "clusterroles", ""), groupClaim("rbac.authorization.k8s.io", "clusterrolebindings", ""),
		groupClaim(authorizationv1.GroupName, "subjectaccessreviews", ""), groupClaim(authorizationv1.GroupName, "localsubjectaccessreviews", ""),
		groupClaim(apisv1alpha2.SchemeGroupVersion.Group, "apibindings", ""),
		groupClaim("wild.wild.west", "sheriffs", identity),
	}
	createCowboysExport(ctx, t, kcp, claimer, claims)
	createBinding(ctx, t, kcp, consumer1, "cowboys", claimer, "today-cowboys", nil)
	namespace(ctx, t, kubeClient(t, sys.AdminConfig(t, string(consumer1))), "default")
	if _, err := kubeClient(t, sys.AdminConfig(t, string(consumer1))).CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before-acceptance"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create configmap: %v", err)
	}
	cowboy := &unstructured.Unstructured{}
	cowboy.SetAPIVersion(cowboysGVR.GroupVersion().String())
	cowboy.SetKind("Cowboy")
	cowboy.SetName("cowboy")
	cowboy.SetNamespace("default")
	if _, err := dynamic.NewForConfigOrDie(sys.AdminConfig(t, string(consumer1))).Resource(cowboysGVR).Namespace("default").Create(ctx, cowboy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create cowboy: %v", err)
	}

	t.Log("Waiting for the export's endpoint slice to name the second shard")
	endpoint := sys.URL(t) + "/shards/" + system.ShardName(1) + "/services/apiexport/" + string(claimer) + "/today-cowboys"
	framework.Eventually(t, func(ctx context.Context) error {
		slice := &apisv1alpha1.APIExportEndpointSlice{}
		if err := kcp.Get(ctx, claimer, slicesGVR, "today-cowboys", slice); err != nil {
			return err
		}
		for _, e := range slice.Status.APIExportEndpoints {
			if e.URL == endpoint {
				return nil
			}
		}
		return fmt.Errorf("endpoints %+v, want %s", slice.Status.APIExportEndpoints, endpoint)
	}, "endpoint slice names %s", endpoint)
	admin := sys.AdminConfig(t, "")
	vw := dynamic.NewForConfigOrDie(withCluster(admin, endpoint, logicalcluster.Wildcard))

	t.Log("The exported resource is retrievable")
	framework.Eventually(t, func(ctx context.Context) error {
		names, err := listNames(ctx, vw, cowboysGVR)
		if err != nil {
			return err
		}
		if len(names) != 1 {
			return fmt.Errorf("cowboys %v, want 1", names)
		}
		return nil
	}, "one cowboy through the view")

	t.Log("Claimed resources list empty before the claims are accepted")
	claimedGVRs := []schema.GroupVersionResource{
		{Version: "v1", Resource: "configmaps"}, {Version: "v1", Resource: "secrets"}, {Version: "v1", Resource: "serviceaccounts"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
		sheriffsGVR,
	}
	framework.Eventually(t, func(ctx context.Context) error {
		for _, gvr := range claimedGVRs {
			names, err := listNames(ctx, vw, gvr)
			if err != nil {
				return fmt.Errorf("list %s: %w", gvr, err)
			}
			if len(names) != 0 {
				return fmt.Errorf("%s: %v, want none", gvr, names)
			}
		}
		return nil
	}, "claimed resources list empty")

	t.Log("Only the reflexive apibinding is listed before the claims are accepted")
	framework.Eventually(t, func(ctx context.Context) error {
		names, err := listNames(ctx, vw, apisv1alpha2.SchemeGroupVersion.WithResource("apibindings"))
		if err != nil {
			return err
		}
		if !slices.Equal(names, []string{"cowboys"}) {
			return fmt.Errorf("apibindings %v, want only the export's binding cowboys", names)
		}
		return nil
	}, "only the reflexive apibinding through the view")
	// The reflexive binding is read-only to the export's owner.
	if err := dynamic.NewForConfigOrDie(withCluster(admin, endpoint, consumer1)).Resource(apisv1alpha2.SchemeGroupVersion.WithResource("apibindings")).Delete(ctx, "cowboys", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("delete of the reflexive apibinding through the view: %v, want 403", err)
	}

	t.Log("Accepting all permission claims")
	var exportClaims []apisv1alpha2.PermissionClaim
	eventuallyBinding(t, kcp, consumer1, "cowboys", "shows the export's claims", func(b *apisv1alpha2.APIBinding) error {
		exportClaims = b.Status.ExportPermissionClaims
		if len(exportClaims) != len(claims) {
			return fmt.Errorf("export claims %+v", exportClaims)
		}
		return nil
	})
	updateBinding(t, kcp, consumer1, "cowboys", func(b *apisv1alpha2.APIBinding) { b.Spec.PermissionClaims = acceptAll(exportClaims) })
	eventuallyBinding(t, kcp, consumer1, "cowboys", "has the sheriffs claim applied", func(b *apisv1alpha2.APIBinding) error {
		for _, c := range b.Status.AppliedPermissionClaims {
			if c.IdentityHash == identity {
				return nil
			}
		}
		return fmt.Errorf("applied %+v", b.Status.AppliedPermissionClaims)
	})

	framework.Eventually(t, func(ctx context.Context) error {
		names, err := listNames(ctx, vw, apisv1alpha2.SchemeGroupVersion.WithResource("apibindings"))
		if err != nil {
			return err
		}
		if len(names) <= 1 {
			return fmt.Errorf("apibindings %v, want more than one", names)
		}
		return nil
	}, "more than one apibinding through the view")

	createSheriff(ctx, t, consumer1, "in-vw")
	framework.Eventually(t, func(ctx context.Context) error {
		names, err := listNames(ctx, vw, sheriffsGVR)
		if err != nil {
			return err
		}
		if want := []string{"in-vw", "in-vw-before"}; !slices.Equal(names, want) {
			return fmt.Errorf("sheriffs %v, want %v", names, want)
		}
		return nil
	}, "both sheriffs of consumer1 through the view")

	sheriffKey, sheriffValue := permissionclaim.LabelKeyAndValue(claimer, "today-cowboys", groupClaim("wild.wild.west", "sheriffs", identity))
	consumer1Dyn := dynamic.NewForConfigOrDie(sys.AdminConfig(t, string(consumer1)))
	sheriffLabel := func(ctx context.Context) (string, bool, error) {
		s, err := consumer1Dyn.Resource(sheriffsGVR).Get(ctx, "in-vw-before", metav1.GetOptions{})
		if err != nil {
			return "", false, err
		}
		v, ok := s.GetLabels()[sheriffKey]
		return v, ok, nil
	}
	if v, ok, err := sheriffLabel(ctx); err != nil || v != sheriffValue {
		t.Fatalf("sheriff in consumer1: claim label %s=%q (present %v), want %q; err %v", sheriffKey, v, ok, sheriffValue, err)
	}
	cmKey, cmValue := permissionclaim.LabelKeyAndValue(claimer, "today-cowboys", coreClaim("configmaps"))
	cms, err := kubeClient(t, sys.AdminConfig(t, string(consumer1))).CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{LabelSelector: cmKey + "=" + cmValue})
	if err != nil || len(cms.Items) == 0 {
		t.Fatalf("claim-labelled configmaps in consumer1: %v, err %v", cms, err)
	}

	t.Log("Removing the configmaps claim from the export")
	framework.Eventually(t, func(ctx context.Context) error {
		e := &apisv1alpha2.APIExport{}
		if err := kcp.Get(ctx, claimer, exportsGVR, "today-cowboys", e); err != nil {
			return err
		}
		e.Spec.PermissionClaims = slices.DeleteFunc(e.Spec.PermissionClaims, func(c apisv1alpha2.PermissionClaim) bool {
			return c.Group == "" && c.Resource == "configmaps"
		})
		e.APIVersion, e.Kind = apisv1alpha2.SchemeGroupVersion.String(), "APIExport"
		return kcp.Update(ctx, claimer, exportsGVR, e.Name, e, &apisv1alpha2.APIExport{})
	}, "remove the configmaps claim")
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := vw.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).List(ctx, metav1.ListOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("list configmaps: want 404, got %v", err)
		}
		return nil
	}, "configmaps are no longer served")

	t.Log("Rejecting the sheriffs claim")
	updateBinding(t, kcp, consumer1, "cowboys", func(b *apisv1alpha2.APIBinding) {
		for i := range b.Spec.PermissionClaims {
			if c := &b.Spec.PermissionClaims[i]; c.Group == sheriffsGVR.Group && c.Resource == sheriffsGVR.Resource {
				c.State = apisv1alpha2.ClaimRejected
			}
		}
	})
	framework.Eventually(t, func(ctx context.Context) error {
		names, err := listNames(ctx, vw, sheriffsGVR)
		if err != nil {
			return err
		}
		if len(names) != 0 {
			return fmt.Errorf("sheriffs %v, want none", names)
		}
		return nil
	}, "no sheriffs through the view")
	framework.Eventually(t, func(ctx context.Context) error {
		if _, ok, err := sheriffLabel(ctx); err != nil || ok {
			return fmt.Errorf("claim label still present (err %v)", err)
		}
		return nil
	}, "the rejected claim's label is removed from the sheriff")

	t.Log("SubjectAccessReviews and LocalSubjectAccessReviews through the view")
	inConsumer1 := kubeClient(t, withCluster(admin, endpoint, consumer1))
	attrs := &authorizationv1.ResourceAttributes{Group: "", Version: "v1", Resource: "configmaps", Verb: "list", Namespace: "default"}
	spec := authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: attrs, User: "elephant", Groups: []string{"mammals", "system:masters"}, UID: "123"}
	if _, err := inConsumer1.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("SubjectAccessReview through the view: %v", err)
	}
	if _, err := inConsumer1.AuthorizationV1().LocalSubjectAccessReviews("default").Create(ctx, &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "default"}, Spec: spec}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("LocalSubjectAccessReview through the view: %v", err)
	}
}

// TestAPIExportPermissionClaimsVirtualWorkspaceAcrossShards is kcp's test
// of the same name: a user on the second shard binds a networking export
// and a managedclusters export that claims its vnets; a user on root binds
// only managedclusters. Through every endpoint of the managedclusters
// export's slice (one per shard, on the front-proxy) the provider lists
// vnets without an error, and finds the user's.
func TestAPIExportPermissionClaimsVirtualWorkspaceAcrossShards(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	kcp := kcpClient(t, sys.AdminConfig(t, ""))
	networking := organization(ctx, t, "networking-provider", "root")
	managedClusters := organization(ctx, t, "managedclusters-provider", "root")
	user := organization(ctx, t, "user", system.ShardName(1))
	mcOnlyUser := organization(ctx, t, "user-mc-only", "root")

	vnetsGVR := schema.GroupVersionResource{Group: "networking.example.io", Version: "v1", Resource: "vnets"}
	mcGVR := schema.GroupVersionResource{Group: "compute.example.io", Version: "v1", Resource: "managedclusters"}
	vnetIdentity := createSchemaAndExport(ctx, t, kcp, networking, "networking", "v1.vnets.networking.example.io", vnetsGVR, "VNet", apiextensionsv1.NamespaceScoped, nil)
	vnetClaim := groupClaim(vnetsGVR.Group, vnetsGVR.Resource, vnetIdentity)
	createSchemaAndExport(ctx, t, kcp, managedClusters, "managedclusters", "v1.managedclusters.compute.example.io", mcGVR, "ManagedCluster", apiextensionsv1.NamespaceScoped, []apisv1alpha2.PermissionClaim{vnetClaim})

	t.Log("The user binds networking, creates a VNet, binds managedclusters accepting the vnets claim")
	createBinding(ctx, t, kcp, user, "networking", networking, "networking", nil)
	namespace(ctx, t, kubeClient(t, sys.AdminConfig(t, string(user))), "default")
	vnet := &unstructured.Unstructured{}
	vnet.SetAPIVersion(vnetsGVR.GroupVersion().String())
	vnet.SetKind("VNet")
	vnet.SetName("user-vnet")
	vnet.SetNamespace("default")
	_ = unstructured.SetNestedField(vnet.Object, "10.0.0.0/16", "spec", "cidr")
	if _, err := dynamic.NewForConfigOrDie(sys.AdminConfig(t, string(user))).Resource(vnetsGVR).Namespace("default").Create(ctx, vnet, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create VNet: %v", err)
	}
	createBinding(ctx, t, kcp, user, "managedclusters", managedClusters, "managedclusters", acceptAll([]apisv1alpha2.PermissionClaim{vnetClaim}))
	t.Log("The mc-only user on root binds managedclusters only")
	createBinding(ctx, t, kcp, mcOnlyUser, "managedclusters", managedClusters, "managedclusters", acceptAll([]apisv1alpha2.PermissionClaim{vnetClaim}))

	for _, ws := range []logicalcluster.Name{user, mcOnlyUser} {
		eventuallyBinding(t, kcp, ws, "managedclusters", "has the vnets claim applied", func(b *apisv1alpha2.APIBinding) error {
			for _, c := range b.Status.AppliedPermissionClaims {
				if c.IdentityHash == vnetIdentity {
					return nil
				}
			}
			return fmt.Errorf("applied %+v", b.Status.AppliedPermissionClaims)
		})
	}

	t.Log("As the managedclusters provider, list VNets through every endpoint")
	admin := sys.AdminConfig(t, "")
	framework.Eventually(t, func(ctx context.Context) error {
		slice := &apisv1alpha1.APIExportEndpointSlice{}
		if err := kcp.Get(ctx, managedClusters, slicesGVR, "managedclusters", slice); err != nil {
			return err
		}
		if len(slice.Status.APIExportEndpoints) < 2 {
			return fmt.Errorf("endpoints %+v, want one per shard", slice.Status.APIExportEndpoints)
		}
		found := false
		for _, e := range slice.Status.APIExportEndpoints {
			names, err := listNames(ctx, dynamic.NewForConfigOrDie(withCluster(admin, e.URL, logicalcluster.Wildcard)), vnetsGVR)
			if err != nil {
				return fmt.Errorf("endpoint %s errored listing vnets (want an empty list, not an error): %w", e.URL, err)
			}
			found = found || slices.Contains(names, "user-vnet")
		}
		if !found {
			return fmt.Errorf("the user's VNet was served by no endpoint")
		}
		return nil
	}, "every endpoint lists vnets, one of them the user's")
}
