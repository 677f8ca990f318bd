package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/permissionclaim"
	"github.com/shardplane/shardplane/pkg/storage"
	"github.com/shardplane/shardplane/test/framework"
)

// TestPermissionClaimLabelsConvergeOnEveryClaimedObject follows the
// permission claims of kcp's e2e tests (apibinding_permissionclaims_test.go:
// a binding accepts an export's configmaps claim and reports
// PermissionClaimsApplied) and asserts what kcp's permissionclaimlabel
// controllers guarantee: every claimed object converges to the claim
// labels its workspace's binding gives it, whether it was created before
// the binding, after it, or before its accepted claims changed. kcp's tests
// cannot make an object stale past admission; here the stale state is
// written to etcd behind the shard's back, as an object admitted against
// old claims and stored after the binding's relabelling would be, and
// only the per-object controller brings it back.
func TestPermissionClaimLabelsConvergeOnEveryClaimedObject(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaceEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	kcp := e.kcp(t, kcpAdmin)
	org := e.readyOrg(ctx, t, "claim-labels")
	provider := readyWorkspace(ctx, t, kcp, org.path(), "provider", nil)
	consumer := readyWorkspace(ctx, t, kcp, org.path(), "consumer", nil)

	configMapsClaim := apisv1alpha2.PermissionClaim{GroupResource: apisv1alpha2.GroupResource{Resource: "configmaps"}, Verbs: []string{"*"}}
	group := uniqueGroup("wildwest")
	schemaName := "today.cowboys." + group
	if err := kcp.create(ctx, provider.path(), apiResourceSchemasGVR, schemaFromCRD(t, schemaName, cowboysCRD(group)), &apisv1alpha1.APIResourceSchema{}); err != nil {
		t.Fatalf("create APIResourceSchema: %v", err)
	}
	export := &apisv1alpha2.APIExport{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport"},
		ObjectMeta: metav1.ObjectMeta{Name: "today-cowboys"},
		Spec: apisv1alpha2.APIExportSpec{
			Resources:        []apisv1alpha2.ResourceSchema{{Name: "cowboys", Group: group, Schema: schemaName, Storage: apisv1alpha2.ResourceSchemaStorage{CRD: &apisv1alpha2.ResourceSchemaStorageCRD{}}}},
			PermissionClaims: []apisv1alpha2.PermissionClaim{configMapsClaim},
		},
	}
	if err := kcp.create(ctx, provider.path(), apiExportsGVR, export, &apisv1alpha2.APIExport{}); err != nil {
		t.Fatalf("create APIExport: %v", err)
	}
	waitForIdentity(t, kcp, provider.path(), "today-cowboys", corev1.ConditionTrue)
	claimKey, claimValue := permissionclaim.LabelKeyAndValue(logicalcluster.Name(provider.cluster()), "today-cowboys", configMapsClaim)

	kube := e.kube(t, kcpAdmin, consumer.path())
	ensureDefaultNamespace(ctx, t, e, consumer.path())
	createLabelledConfigMap(ctx, t, kube, "before-shared", "yes")
	createLabelledConfigMap(ctx, t, kube, "before-private", "no")

	t.Log("Accepting the claim for all configmaps labels those created before and after")
	binding := bindingTo("cowboys", provider.path(), "today-cowboys")
	binding.Spec.PermissionClaims = []apisv1alpha2.AcceptablePermissionClaim{{
		ScopedPermissionClaim: apisv1alpha2.ScopedPermissionClaim{PermissionClaim: configMapsClaim, Selector: apisv1alpha2.PermissionClaimSelector{MatchAll: true}},
		State:                 apisv1alpha2.ClaimAccepted,
	}}
	if err := kcp.create(ctx, consumer.path(), apiBindingsGVR, binding, &apisv1alpha2.APIBinding{}); err != nil {
		t.Fatalf("create APIBinding: %v", err)
	}
	claimsApplied := func(b *apisv1alpha2.APIBinding) bool {
		return conditionReason(b, apisv1alpha2.PermissionClaimsApplied, corev1.ConditionTrue, "") && len(b.Status.AppliedPermissionClaims) == 1
	}
	waitForBinding(t, kcp, consumer.path(), "cowboys", "applied its claims", claimsApplied)
	createLabelledConfigMap(ctx, t, kube, "after-shared", "yes")
	createLabelledConfigMap(ctx, t, kube, "after-private", "no")
	claimed := map[string]string{claimKey: claimValue}
	eventuallyClaimLabels(t, kube, map[string]map[string]string{
		"before-shared": claimed, "before-private": claimed, "after-shared": claimed, "after-private": claimed,
	}, nil)

	t.Log("Narrowing the accepted claim to share=yes relabels every configmap")
	updateAPIBinding(t, kcp, consumer.path(), "cowboys", func(b *apisv1alpha2.APIBinding) {
		b.Spec.PermissionClaims[0].Selector = apisv1alpha2.PermissionClaimSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"share": "yes"}}}
	})
	waitForBinding(t, kcp, consumer.path(), "cowboys", "applied the narrowed claim", func(b *apisv1alpha2.APIBinding) bool {
		return claimsApplied(b) && b.Status.AppliedPermissionClaims[0].Selector.MatchLabels["share"] == "yes"
	})
	want := map[string]map[string]string{"before-shared": claimed, "before-private": nil, "after-shared": claimed, "after-private": nil}
	eventuallyClaimLabels(t, kube, want, nil)

	t.Log("Claim labels made stale in storage, past admission, are set again")
	etcd := shardEtcd(t, e.s)
	configMaps := schema.GroupResource{Resource: "configmaps"}
	rewritten := map[string]int64{
		"before-shared": rewriteStored(ctx, t, etcd, configMaps, consumer.cluster(), "default", "before-shared", func(cm *corev1.ConfigMap) {
			delete(cm.Labels, claimKey)
		}),
		"after-private": rewriteStored(ctx, t, etcd, configMaps, consumer.cluster(), "default", "after-private", func(cm *corev1.ConfigMap) {
			cm.Labels[claimKey] = claimValue
		}),
	}
	eventuallyClaimLabels(t, kube, want, rewritten)
}

func createLabelledConfigMap(ctx context.Context, t *testing.T, kube kubernetes.Interface, name, share string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"share": share}}}
	if _, err := kube.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create configmap %s: %v", name, err)
	}
}

// eventuallyClaimLabels polls until each named configmap of namespace
// default carries exactly the given claim labels and, if it is in
// writtenAfter, was written after that etcd revision (a read that still
// shows the state before it proves nothing).
func eventuallyClaimLabels(t *testing.T, kube kubernetes.Interface, want map[string]map[string]string, writtenAfter map[string]int64) {
	t.Helper()
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		for name, labels := range want {
			cm, err := kube.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if after, ok := writtenAfter[name]; ok {
				if rv, err := strconv.ParseInt(cm.ResourceVersion, 10, 64); err != nil || rv <= after {
					return fmt.Errorf("configmap %s at resource version %s, not yet written after revision %d", name, cm.ResourceVersion, after)
				}
			}
			got := map[string]string{}
			for k, v := range cm.Labels {
				if permissionclaim.IsLabel(k) {
					got[k] = v
				}
			}
			if len(got) != len(labels) {
				return fmt.Errorf("configmap %s has claim labels %v, want %v", name, got, labels)
			}
			for k, v := range labels {
				if got[k] != v {
					return fmt.Errorf("configmap %s has claim labels %v, want %v", name, got, labels)
				}
			}
		}
		return nil
	}, "claim labels of configmaps %v", keysOf(want))
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// updateAPIBinding changes an APIBinding, retrying on conflicts with its
// controller's writes.
func updateAPIBinding(t *testing.T, c *kcpREST, cluster, name string, change func(*apisv1alpha2.APIBinding)) {
	t.Helper()
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		b := &apisv1alpha2.APIBinding{}
		if err := c.get(ctx, cluster, apiBindingsGVR, name, b); err != nil {
			return err
		}
		change(b)
		b.APIVersion, b.Kind = apisv1alpha2.SchemeGroupVersion.String(), "APIBinding"
		return c.update(ctx, cluster, apiBindingsGVR, name, b, &apisv1alpha2.APIBinding{})
	}, "update APIBinding %s|%s", cluster, name)
}

// shardEtcd returns a client of the shard's embedded etcd, which serves
// plain HTTP on loopback.
func shardEtcd(t *testing.T, s *framework.Shard) *clientv3.Client {
	t.Helper()
	port, _ := s.EtcdPorts()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{fmt.Sprintf("http://127.0.0.1:%d", port)}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// protobufPrefix starts every object Kubernetes stores as protobuf.
var protobufPrefix = []byte{0x6b, 0x38, 0x73, 0x00}

// rewriteStored changes a configmap in etcd directly: no admission, no
// API server write, only the watch event of the new value. It returns the
// revision of the write.
func rewriteStored(ctx context.Context, t *testing.T, etcd *clientv3.Client, gr schema.GroupResource, cluster, namespace, name string, change func(*corev1.ConfigMap)) int64 {
	t.Helper()
	key := "/registry/" + storage.ResourcePrefix(gr) + "/" + cluster + "/" + namespace + "/" + name
	resp, err := etcd.Get(ctx, key)
	if err != nil {
		t.Fatalf("get %s from etcd: %v", key, err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("etcd has no %s", key)
	}
	stored := resp.Kvs[0]
	var serializer runtime.Serializer = json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme, json.SerializerOptions{})
	if bytes.HasPrefix(stored.Value, protobufPrefix) {
		serializer = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	}
	obj, _, err := serializer.Decode(stored.Value, nil, &corev1.ConfigMap{})
	if err != nil {
		t.Fatalf("decode %s: %v", key, err)
	}
	cm := obj.(*corev1.ConfigMap)
	change(cm)
	cm.APIVersion, cm.Kind = "v1", "ConfigMap"
	var buf bytes.Buffer
	if err := serializer.Encode(cm, &buf); err != nil {
		t.Fatalf("encode %s: %v", key, err)
	}
	// Only if nobody wrote it since it was read.
	txn, err := etcd.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", stored.ModRevision)).Then(clientv3.OpPut(key, buf.String())).Commit()
	if err != nil || !txn.Succeeded {
		t.Fatalf("put %s to etcd: %v (succeeded %v)", key, err, txn != nil && txn.Succeeded)
	}
	return txn.Header.Revision
}
