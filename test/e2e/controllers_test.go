package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/test/framework"
)

// gcTimeout bounds waits for the controllers of this file.
const gcTimeout = 60 * time.Second

// kcCluster is a fresh logical cluster (its LogicalCluster exists) with a
// typed client as shard-admin.
type kcCluster struct {
	name   string
	config *rest.Config
	kube   kubernetes.Interface
}

// newKCCluster creates a LogicalCluster in a fresh cluster name as
// shard-admin, which makes the cluster exist for everyone.
func newKCCluster(ctx context.Context, t *testing.T, s *framework.Shard, prefix string) kcCluster {
	t.Helper()
	kcp, err := kcpclient.New(s.ClientConfig(t, "shard-base"))
	if err != nil {
		t.Fatal(err)
	}
	name := framework.UniqueClusterName(prefix)
	if err := createLogicalCluster(ctx, kcp, name); err != nil {
		t.Fatal(err)
	}
	cfg := s.ClusterConfig(t, "shard-base", name)
	return kcCluster{name: name, config: cfg, kube: newKubeClient(t, cfg)}
}

// createLogicalCluster creates the LogicalCluster of a cluster name; safe
// to call from any goroutine.
func createLogicalCluster(ctx context.Context, kcp *kcpclient.Client, name string) error {
	lc := &corev1alpha1.LogicalCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: corev1alpha1.SchemeGroupVersion.String(), Kind: "LogicalCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: corev1alpha1.LogicalClusterName},
	}
	gvr := corev1alpha1.SchemeGroupVersion.WithResource("logicalclusters")
	if err := kcp.Create(ctx, logicalcluster.Name(name), gvr, lc, &corev1alpha1.LogicalCluster{}); err != nil {
		return fmt.Errorf("create LogicalCluster in %s: %w", name, err)
	}
	return nil
}

// ownerRef returns a reference to a configmap.
func ownerRef(cm *corev1.ConfigMap, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID, BlockOwnerDeletion: &block}
}

// createOwned creates a configmap with the given ownerReferences and
// finalizers.
func createOwned(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, name string, finalizers []string, refs ...metav1.OwnerReference) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: refs, Finalizers: finalizers}}
	var created *corev1.ConfigMap
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, eventually, true, func(ctx context.Context) (bool, error) {
		var err error
		created, err = c.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("create configmap %s/%s: %v", ns, name, err)
	}
	return created
}

// waitGone waits until get answers NotFound.
func waitGone(t *testing.T, what string, get func(context.Context) error) {
	t.Helper()
	framework.EventuallyWithin(t, gcTimeout, func(ctx context.Context) error {
		if err := get(ctx); !apierrors.IsNotFound(err) {
			return fmt.Errorf("answered %v", err)
		}
		return nil
	}, "%s still there", what)
}

func getConfigMap(c kubernetes.Interface, ns, name string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		return err
	}
}

// requireStays checks for a while that a configmap exists with its UID,
// and returns it.
func requireStays(ctx context.Context, t *testing.T, c kubernetes.Interface, cm *corev1.ConfigMap, d time.Duration) *corev1.ConfigMap {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		got, err := c.CoreV1().ConfigMaps(cm.Namespace).Get(ctx, cm.Name, metav1.GetOptions{})
		if err != nil || got.UID != cm.UID {
			t.Fatalf("configmap %s/%s should stay: err=%v", cm.Namespace, cm.Name, err)
		}
		if time.Now().After(deadline) {
			return got
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func deleteConfigMap(ctx context.Context, t *testing.T, c kubernetes.Interface, cm *corev1.ConfigMap, policy metav1.DeletionPropagation) {
	t.Helper()
	if err := c.CoreV1().ConfigMaps(cm.Namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		t.Fatalf("delete configmap %s/%s: %v", cm.Namespace, cm.Name, err)
	}
}

func removeFinalizers(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, name string) {
	t.Helper()
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := c.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("remove finalizers of %s/%s: %v", ns, name, err)
	}
}

func TestNamespaceDeletionDeletesContentAndWaitsForFinalizers(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	c := newKCCluster(ctx, t, s, "nsdel")
	const ns = "doomed"
	createNamespace(ctx, t, c.kube, ns)
	createOwned(ctx, t, c.kube, ns, "plain", nil)
	createOwned(ctx, t, c.kube, ns, "held", []string{"example.com/hold"})
	gizmos := installGizmos(ctx, t, c).Namespace(ns)
	createGizmo(t, gizmos, "custom")

	if err := c.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "configmap plain", getConfigMap(c.kube, ns, "plain"))
	waitGone(t, "custom resource", func(ctx context.Context) error {
		_, err := gizmos.Get(ctx, "custom", metav1.GetOptions{})
		return err
	})

	// The held configmap keeps the namespace, with upstream's conditions.
	var last *corev1.Namespace
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, gcTimeout, true, func(ctx context.Context) (bool, error) {
		got, err := c.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = got
		return nsCondition(got, corev1.NamespaceFinalizersRemaining) == corev1.ConditionTrue &&
			nsCondition(got, corev1.NamespaceDeletionContentFailure) == corev1.ConditionFalse, nil
	})
	if err != nil {
		t.Fatalf("namespace conditions never showed the remaining finalizer: %v; status: %+v", err, last.Status)
	}

	removeFinalizers(ctx, t, c.kube, ns, "held")
	waitGone(t, "namespace "+ns, func(ctx context.Context) error {
		_, err := c.kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return err
	})
}

func nsCondition(ns *corev1.Namespace, typ corev1.NamespaceConditionType) corev1.ConditionStatus {
	for _, c := range ns.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

func TestGarbageCollectorDeletesDependentsInTheBackground(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	c := newKCCluster(ctx, t, s, "gcbg")
	waitForNamespace(t, c.kube, "default")
	owner := createOwned(ctx, t, c.kube, "default", "owner", nil)
	createOwned(ctx, t, c.kube, "default", "dependent", nil, ownerRef(owner, false))
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "dependent", OwnerReferences: []metav1.OwnerReference{ownerRef(owner, false)}}}
	if _, err := c.kube.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	deleteConfigMap(ctx, t, c.kube, owner, metav1.DeletePropagationBackground)
	waitGone(t, "dependent configmap", getConfigMap(c.kube, "default", "dependent"))
	waitGone(t, "dependent secret", func(ctx context.Context) error {
		_, err := c.kube.CoreV1().Secrets("default").Get(ctx, "dependent", metav1.GetOptions{})
		return err
	})
}

func TestGarbageCollectorForegroundDeletionWaitsForBlockingDependents(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	c := newKCCluster(ctx, t, s, "gcfg")
	waitForNamespace(t, c.kube, "default")
	owner := createOwned(ctx, t, c.kube, "default", "owner", nil)
	createOwned(ctx, t, c.kube, "default", "blocking", []string{"example.com/hold"}, ownerRef(owner, true))
	createOwned(ctx, t, c.kube, "default", "nonblocking", nil, ownerRef(owner, false))

	deleteConfigMap(ctx, t, c.kube, owner, metav1.DeletePropagationForeground)
	waitGone(t, "non-blocking dependent", getConfigMap(c.kube, "default", "nonblocking"))

	// The blocking dependent is being deleted, held by its finalizer; the
	// owner waits for it.
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, gcTimeout, true, func(ctx context.Context) (bool, error) {
		dep, err := c.kube.CoreV1().ConfigMaps("default").Get(ctx, "blocking", metav1.GetOptions{})
		return err == nil && dep.DeletionTimestamp != nil, err
	})
	if err != nil {
		t.Fatalf("blocking dependent was not deleted: %v", err)
	}
	got, err := c.kube.CoreV1().ConfigMaps("default").Get(ctx, "owner", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("owner must wait for its blocking dependent: %v", err)
	}
	if got.DeletionTimestamp == nil || !containsString(got.Finalizers, metav1.FinalizerDeleteDependents) {
		t.Fatalf("owner: deletionTimestamp %v finalizers %v, want foreground deletion in progress", got.DeletionTimestamp, got.Finalizers)
	}

	removeFinalizers(ctx, t, c.kube, "default", "blocking")
	waitGone(t, "owner", getConfigMap(c.kube, "default", "owner"))
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestGarbageCollectorOrphanDeletionKeepsDependents(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	c := newKCCluster(ctx, t, s, "gcorphan")
	waitForNamespace(t, c.kube, "default")
	owner := createOwned(ctx, t, c.kube, "default", "owner", nil)
	other := createOwned(ctx, t, c.kube, "default", "other-owner", nil)
	dep := createOwned(ctx, t, c.kube, "default", "dependent", nil, ownerRef(owner, true), ownerRef(other, false))

	deleteConfigMap(ctx, t, c.kube, owner, metav1.DeletePropagationOrphan)
	waitGone(t, "owner", getConfigMap(c.kube, "default", "owner"))
	got := requireStays(ctx, t, c.kube, dep, 2*time.Second)
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != other.UID {
		t.Errorf("orphaned dependent: ownerReferences %+v, want only %s", got.OwnerReferences, other.UID)
	}
}

// gizmoCRD is a namespaced custom resource for the collector's tests.
func gizmoCRD() *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gizmos.gc.shardplane.test"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "gc.shardplane.test",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gizmos", Singular: "gizmo", Kind: "Gizmo", ListKind: "GizmoList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve,
				}},
			}},
		},
	}
}

var gizmosGVR = schema.GroupVersionResource{Group: "gc.shardplane.test", Version: "v1", Resource: "gizmos"}

// installGizmos creates the gizmo CRD in a cluster and returns its client.
func installGizmos(ctx context.Context, t *testing.T, c kcCluster) dynamic.NamespaceableResourceInterface {
	t.Helper()
	crds, err := apiextensionsclient.NewForConfig(c.config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, gizmoCRD(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD: %v", err)
	}
	dyn, err := dynamic.NewForConfig(c.config)
	if err != nil {
		t.Fatal(err)
	}
	return dyn.Resource(gizmosGVR)
}

// createGizmo creates a gizmo, retrying while its CRD is not served yet.
func createGizmo(t *testing.T, gizmos dynamic.ResourceInterface, name string, refs ...metav1.OwnerReference) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "gc.shardplane.test/v1", "kind": "Gizmo"}}
	u.SetName(name)
	u.SetOwnerReferences(refs)
	var created *unstructured.Unstructured
	framework.EventuallyWithin(t, gcTimeout, func(ctx context.Context) error {
		var err error
		created, err = gizmos.Create(ctx, u, metav1.CreateOptions{})
		return err
	}, "create gizmo %s", name)
	return created
}

func TestGarbageCollectorCollectsCustomResources(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	c := newKCCluster(ctx, t, s, "gccr")
	waitForNamespace(t, c.kube, "default")
	gizmos := installGizmos(ctx, t, c).Namespace("default")
	create := func(name string, refs ...metav1.OwnerReference) *unstructured.Unstructured {
		t.Helper()
		return createGizmo(t, gizmos, name, refs...)
	}
	owner := create("owner")
	ref := metav1.OwnerReference{APIVersion: "gc.shardplane.test/v1", Kind: "Gizmo", Name: "owner", UID: owner.GetUID()}
	create("dependent", ref)
	createOwned(ctx, t, c.kube, "default", "dependent-of-gizmo", nil, ref)

	if err := gizmos.Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "dependent gizmo", func(ctx context.Context) error {
		_, err := gizmos.Get(ctx, "dependent", metav1.GetOptions{})
		return err
	})
	waitGone(t, "configmap owned by a gizmo", getConfigMap(c.kube, "default", "dependent-of-gizmo"))

	// A custom resource owned by a deleted configmap goes too.
	cmOwner := createOwned(ctx, t, c.kube, "default", "cm-owner", nil)
	create("owned-by-cm", ownerRef(cmOwner, false))
	deleteConfigMap(ctx, t, c.kube, cmOwner, metav1.DeletePropagationBackground)
	waitGone(t, "gizmo owned by a configmap", func(ctx context.Context) error {
		_, err := gizmos.Get(ctx, "owned-by-cm", metav1.GetOptions{})
		return err
	})
}

// TestGarbageCollectorKeysOwnersByClusterAndUID: an ownerReference resolves
// in the dependent's cluster only. A dependent in B that names the UID of an
// owner in A has an absent owner (and is collected, or loses that reference
// when it has another, solid owner); deleting A's owner touches nothing in B.
func TestGarbageCollectorKeysOwnersByClusterAndUID(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	a, b := newKCCluster(ctx, t, s, "gcuid-a"), newKCCluster(ctx, t, s, "gcuid-b")
	waitForNamespace(t, a.kube, "default")
	waitForNamespace(t, b.kube, "default")

	ownerA := createOwned(ctx, t, a.kube, "default", "owner", nil)
	ownerB := createOwned(ctx, t, b.kube, "default", "owner", nil) // same name, other UID
	depA := createOwned(ctx, t, a.kube, "default", "dependent", nil, ownerRef(ownerA, false))
	depB := createOwned(ctx, t, b.kube, "default", "dependent", nil, ownerRef(ownerB, false))
	createOwned(ctx, t, b.kube, "default", "foreign", nil, ownerRef(ownerA, false))
	mixed := createOwned(ctx, t, b.kube, "default", "mixed", nil, ownerRef(ownerB, false), ownerRef(ownerA, false))

	waitGone(t, "B's dependent naming only A's owner UID", getConfigMap(b.kube, "default", "foreign"))
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, gcTimeout, true, func(ctx context.Context) (bool, error) {
		got, err := b.kube.CoreV1().ConfigMaps("default").Get(ctx, "mixed", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(got.OwnerReferences) == 1 && got.OwnerReferences[0].UID == ownerB.UID, nil
	})
	if err != nil {
		t.Fatalf("B's dependent with owners in both clusters should keep only B's owner: %v", err)
	}
	requireStays(ctx, t, a.kube, depA, time.Second)

	deleteConfigMap(ctx, t, a.kube, ownerA, metav1.DeletePropagationBackground)
	waitGone(t, "A's dependent", getConfigMap(a.kube, "default", "dependent"))
	requireStays(ctx, t, b.kube, depB, 2*time.Second)
	requireStays(ctx, t, b.kube, mixed, 0)
	requireStays(ctx, t, b.kube, ownerB, 0)
}

// caBundle returns the CA that admin.kubeconfig trusts: the shard's
// serving CA.
// rootCA returns what every namespace's kube-root-ca.crt and each token
// secret's ca.crt must hold: the CA certificates of the shard's serving
// bundle (its kubeconfig's CA data: the serving certificate, then its CA),
// having checked that they alone verify the certificate the shard serves.
func rootCA(t *testing.T, s *framework.Shard) []byte {
	t.Helper()
	cfg := s.ClientConfig(t, "shard-base")
	bundle := cfg.CAData
	if len(bundle) == 0 {
		var err error
		if bundle, err = os.ReadFile(cfg.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	certs, err := certutil.ParseCertsPEM(bundle)
	if err != nil {
		t.Fatal(err)
	}
	var cas []byte
	for _, c := range certs {
		if c.IsCA {
			cas = append(cas, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
		}
	}
	if cas == nil {
		t.Fatalf("the serving bundle holds no CA certificate")
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cas)
	u, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{RootCAs: pool, ServerName: u.Hostname()})
	if err != nil {
		t.Fatalf("the serving bundle's CA does not verify the shard: %v", err)
	}
	_ = conn.Close()
	return cas
}

func TestEveryNamespaceGetsDefaultServiceAccountAndRootCA(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	c := newKCCluster(ctx, t, s, "sa")
	const ns = "team"
	createNamespace(ctx, t, c.kube, ns)
	ca := rootCA(t, s)

	waitDefaults := func(what string) {
		t.Helper()
		framework.EventuallyWithin(t, gcTimeout, func(ctx context.Context) error {
			if _, err := c.kube.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err != nil {
				return err
			}
			cm, err := c.kube.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !bytes.Equal([]byte(cm.Data["ca.crt"]), ca) {
				return fmt.Errorf("ca.crt is %d bytes, not the serving certificate's CA", len(cm.Data["ca.crt"]))
			}
			return nil
		}, "%s: default service account and kube-root-ca.crt", what)
	}
	waitDefaults("new namespace")
	waitForNamespace(t, c.kube, "default")
	if _, err := c.kube.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{}); err != nil {
		// The default namespace gets them too (eventually).
		framework.EventuallyWithin(t, gcTimeout, func(ctx context.Context) error {
			_, err := c.kube.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
			return err
		}, "namespace default has no kube-root-ca.crt")
	}

	if err := c.kube.CoreV1().ServiceAccounts(ns).Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.kube.CoreV1().ConfigMaps(ns).Delete(ctx, "kube-root-ca.crt", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDefaults("after deletion")

	patch := []byte(`{"data":{"ca.crt":"tampered"}}`)
	if _, err := c.kube.CoreV1().ConfigMaps(ns).Patch(ctx, "kube-root-ca.crt", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDefaults("after tampering")
}

// saCluster is a cluster with namespace "team" whose default service
// account is cluster-admin there.
func saCluster(ctx context.Context, t *testing.T, s *framework.Shard, prefix string) kcCluster {
	t.Helper()
	c := newKCCluster(ctx, t, s, prefix)
	createNamespace(ctx, t, c.kube, "team")
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "team-default-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "team", Name: "default"}},
	}
	if _, err := c.kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyWithin(t, gcTimeout, func(ctx context.Context) error {
		_, err := c.kube.CoreV1().ServiceAccounts("team").Get(ctx, "default", metav1.GetOptions{})
		return err
	}, "no default service account in %s", c.name)
	return c
}

func TestServiceAccountTokenAuthenticatesOnlyInItsCluster(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	a, b := saCluster(ctx, t, s, "tok-a"), saCluster(ctx, t, s, "tok-b")

	tr, err := a.kube.CoreV1().ServiceAccounts("team").CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest: %v", err)
	}
	if tr.Status.Token == "" {
		t.Fatal("TokenRequest returned no token")
	}
	as := func(cluster string) kubernetes.Interface {
		cfg := rest.AnonymousClientConfig(s.ClusterConfig(t, "shard-base", cluster))
		cfg.BearerToken = tr.Status.Token
		return newKubeClient(t, cfg)
	}

	// RBAC caches may lag the binding a moment.
	framework.EventuallyWithin(t, gcTimeout, func(ctx context.Context) error {
		_, err := as(a.name).CoreV1().ConfigMaps("team").List(ctx, metav1.ListOptions{})
		return err
	}, "token in its own cluster")
	review, err := as(a.name).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectReview: %v", err)
	}
	if u := review.Status.UserInfo; u.Username != "system:serviceaccount:team:default" || !containsString(u.Extra[saClusterExtra], a.name) {
		t.Errorf("user %q extra %v, want the service account of %s", u.Username, u.Extra, a.name)
	}

	// B has the same service account name and the same binding; the token
	// of A's service account is still refused there.
	_, err = as(b.name).CoreV1().ConfigMaps("team").List(ctx, metav1.ListOptions{})
	requireStatus(t, err, http.StatusForbidden, "list configmaps in another cluster with A's token")
	if err != nil && !strings.Contains(err.Error(), "act only in that cluster") {
		t.Errorf("403 in another cluster should come from the service account cluster guard: %v", err)
	}
	_, err = as(b.name).CoreV1().Namespaces().Get(ctx, "team", metav1.GetOptions{})
	requireStatus(t, err, http.StatusForbidden, "get namespace in another cluster with A's token")
	cfg := rest.AnonymousClientConfig(s.ClientConfig(t, "shard-base"))
	cfg.Host = s.BaseURL(t)
	cfg.BearerToken = tr.Status.Token
	// Without a cluster prefix (an in-cluster client) the token's own
	// cluster serves the request, as kcp's in-cluster rewrite does.
	nss, err := newKubeClient(t, cfg).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil || !slices.ContainsFunc(nss.Items, func(ns corev1.Namespace) bool {
		return ns.Name == "team" && ns.Annotations[clusterAnnotation] == a.name
	}) {
		t.Errorf("list namespaces without a cluster prefix with A's token: %v, want A's namespaces", err)
	}

	// Deleting the service account invalidates the token (after the
	// authentication cache's few seconds).
	if err := a.kube.CoreV1().ServiceAccounts("team").Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, gcTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := as(a.name).CoreV1().ConfigMaps("team").List(ctx, metav1.ListOptions{})
		return apierrors.IsUnauthorized(err), nil
	})
	if err != nil {
		t.Errorf("token of a deleted service account still authenticates")
	}
}

// TestIdleClusterCost logs goroutines and RSS of a shard with no and with
// 1,000 idle logical clusters, each with one namespace. It asserts nothing.
func TestIdleClusterCost(t *testing.T) {
	// A measurement (it only logs), not a check: kept out of the default
	// run to keep CI lean.
	if os.Getenv("SHARDPLANE_E2E_IDLE_COST") == "" {
		t.Skip("measures 1,000 idle logical clusters; set SHARDPLANE_E2E_IDLE_COST=1 to run")
	}
	s := framework.StartShard(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	const n = 1000

	admin := s.ClusterConfig(t, "shard-base", "*")
	wildcard := newKubeClient(t, admin)
	rootCAs := func() int {
		l, err := wildcard.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=kube-root-ca.crt"})
		if err != nil {
			t.Fatalf("wildcard list: %v", err)
		}
		return len(l.Items)
	}
	settle := func() { time.Sleep(15 * time.Second) }
	settle()
	g0, rss0 := shardCost(ctx, t, s)
	base := rootCAs()
	t.Logf("0 extra logical clusters: go_goroutines=%d VmRSS=%d kB (kube-root-ca.crt configmaps: %d)", g0, rss0, base)

	kcp, err := kcpclient.New(s.ClientConfig(t, "shard-base"))
	if err != nil {
		t.Fatal(err)
	}
	adminConfig, baseURL := s.ClientConfig(t, "shard-base"), s.BaseURL(t)
	var failed atomic.Int32
	start := time.Now()
	parallel(n, 8, func(i int) {
		if failed.Load() > 0 {
			return
		}
		name := framework.UniqueClusterName("idle")
		err := createLogicalCluster(ctx, kcp, name)
		if err == nil {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "work"}}
			cfg := rest.CopyConfig(adminConfig)
			cfg.Host = baseURL + "/clusters/" + name
			var c kubernetes.Interface
			if c, err = kubernetes.NewForConfig(cfg); err == nil {
				_, err = c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
			}
		}
		if err != nil {
			failed.Add(1)
			t.Errorf("cluster %s: %v", name, err)
		}
	})
	if failed.Load() > 0 {
		t.FailNow()
	}
	t.Logf("created %d logical clusters with a namespace each in %s", n, time.Since(start).Round(time.Second))
	// Wait until the controllers have caught up (every namespace has its
	// root CA config map), then let the shard idle.
	err = wait.PollUntilContextTimeout(ctx, time.Second, 10*time.Minute, true, func(context.Context) (bool, error) {
		return rootCAs() >= base+n, nil
	})
	if err != nil {
		t.Fatalf("kube-root-ca.crt configmaps: %d, want at least %d", rootCAs(), base+n)
	}
	settle()
	g1, rss1 := shardCost(ctx, t, s)
	t.Logf("%d extra logical clusters: go_goroutines=%d VmRSS=%d kB (kube-root-ca.crt configmaps: %d)", n, g1, rss1, rootCAs())
	t.Logf("per idle logical cluster: %+.3f goroutines, %+.1f kB RSS", float64(g1-g0)/n, float64(rss1-rss0)/n)
}

// shardCost reads go_goroutines from /metrics and VmRSS of the shard process.
func shardCost(ctx context.Context, t *testing.T, s *framework.Shard) (goroutines int, rssKB int) {
	t.Helper()
	if v, ok := s.Metrics(ctx, t).Value("go_goroutines", nil); ok {
		goroutines = int(v)
	}
	pid := shardPID(t, s)
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		t.Fatalf("read status of shard process %d: %v", pid, err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			rssKB, _ = strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
		}
	}
	return goroutines, rssKB
}

// shardPID finds the shard process by its --root-directory flag.
func shardPID(t *testing.T, s *framework.Shard) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		for i, a := range args {
			if a == "--root-directory="+s.RootDir() || (a == "--root-directory" && i+1 < len(args) && args[i+1] == s.RootDir()) {
				return pid
			}
		}
	}
	t.Fatalf("no process with --root-directory %s", s.RootDir())
	return 0
}
