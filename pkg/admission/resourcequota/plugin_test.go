package resourcequota

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	kubefake "k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

func quotaIn(cluster logicalcluster.Name, hard, used int64) *corev1.ResourceQuota {
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "q", UID: types.UID("uid-" + string(cluster)), ResourceVersion: "1",
			Annotations: map[string]string{logicalcluster.AnnotationKey: string(cluster)}},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/configmaps": *resource.NewQuantity(hard, resource.DecimalSI)}},
	}
	q.Status.Hard = q.Spec.Hard
	q.Status.Used = corev1.ResourceList{"count/configmaps": *resource.NewQuantity(used, resource.DecimalSI)}
	return q
}

func createConfigMap(ctx context.Context, p *Plugin, cluster logicalcluster.Name) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "cm"}}
	a := admission.NewAttributesRecord(cm, nil, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "team", "cm",
		corev1.SchemeGroupVersion.WithResource("configmaps"), "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "u"})
	return p.Validate(logicalcluster.WithCluster(ctx, cluster), a, nil)
}

// A quota limits its own cluster only: cluster a is full, cluster b has the
// same namespace and quota name with room, cluster c has no quota.
func TestValidateEnforcesTheQuotasOfTheRequestsCluster(t *testing.T) {
	ctx := context.Background()
	quotas := wildcardinformer.New(&cache.ListWatch{}, &corev1.ResourceQuota{}, "test")
	full, room := quotaIn("a", 1, 1), quotaIn("b", 2, 0)
	for _, q := range []*corev1.ResourceQuota{full, room} {
		if err := quotas.Indexer().Add(q); err != nil {
			t.Fatal(err)
		}
	}
	clients := map[logicalcluster.Name]*kubefake.Clientset{"a": kubefake.NewClientset(full.DeepCopy()), "b": kubefake.NewClientset(room.DeepCopy())}
	p := New(quotas)
	f := func(cluster logicalcluster.Name) (corev1client.ResourceQuotasGetter, error) {
		return clients[cluster].CoreV1(), nil
	}
	p.quotasClient.Store(&f)

	err := createConfigMap(ctx, p, "a")
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota: q, requested: count/configmaps=1, used: count/configmaps=1, limited: count/configmaps=1") {
		t.Errorf("create in full cluster a: %v, want 403 exceeded quota", err)
	}
	if err := createConfigMap(ctx, p, "b"); err != nil {
		t.Errorf("create in cluster b with room: %v", err)
	}
	got, err := clients["b"].CoreV1().ResourceQuotas("team").Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if used := got.Status.Used["count/configmaps"]; used.Value() != 1 {
		t.Errorf("b's quota used = %v after one create, want 1", used.String())
	}
	a, _ := clients["a"].CoreV1().ResourceQuotas("team").Get(ctx, "q", metav1.GetOptions{})
	if used := a.Status.Used["count/configmaps"]; used.Value() != 1 {
		t.Errorf("a's quota was charged: used = %v", used.String())
	}
	if err := createConfigMap(ctx, p, "c"); err != nil {
		t.Errorf("create in cluster c without quota: %v", err)
	}
}

// A workspace-wide quota (kcp's "admin" namespace with the cluster-scoped
// annotation) limits every namespace and cluster-scoped objects of its
// cluster; the same annotation elsewhere makes an ordinary quota.
func TestValidateEnforcesWorkspaceWideQuotas(t *testing.T) {
	ctx := context.Background()
	quotas := wildcardinformer.New(&cache.ListWatch{}, &corev1.ResourceQuota{}, "test")
	wide := quotaIn("a", 1, 1)
	wide.Namespace = "admin"
	wide.Annotations["experimental.quota.kcp.io/cluster-scoped"] = "true"
	roles := corev1.ResourceName("count/clusterroles.rbac.authorization.k8s.io")
	wide.Spec.Hard[roles] = resource.MustParse("0")
	wide.Status.Hard, wide.Status.Used[roles] = wide.Spec.Hard, resource.MustParse("0")
	elsewhere := wide.DeepCopy()
	elsewhere.Namespace, elsewhere.Annotations[logicalcluster.AnnotationKey] = "admin", "b"
	elsewhere.Annotations["experimental.quota.kcp.io/cluster-scoped"] = "false"
	for _, q := range []*corev1.ResourceQuota{wide, elsewhere} {
		if err := quotas.Indexer().Add(q); err != nil {
			t.Fatal(err)
		}
	}
	p := New(quotas)
	f := func(logicalcluster.Name) (corev1client.ResourceQuotasGetter, error) {
		return kubefake.NewClientset().CoreV1(), nil
	}
	p.quotasClient.Store(&f)

	if err := createConfigMap(ctx, p, "a"); !apierrors.IsForbidden(err) {
		t.Errorf("configmap in namespace team of a full workspace: %v, want 403", err)
	}
	if err := createConfigMap(ctx, p, "b"); err != nil {
		t.Errorf("a quota without the annotation limited another namespace: %v", err)
	}
	role := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "r"}}
	a := admission.NewAttributesRecord(role, nil, schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, "", "r",
		schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, "", admission.Create, &metav1.CreateOptions{}, false, &user.DefaultInfo{Name: "u"})
	if err := p.Validate(logicalcluster.WithCluster(ctx, "a"), a, nil); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota") {
		t.Errorf("cluster-scoped object over a workspace-wide quota: %v, want 403 exceeded quota", err)
	}
}
