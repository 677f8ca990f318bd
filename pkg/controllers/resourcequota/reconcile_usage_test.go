package resourcequota

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func objects(n int) []runtime.Object {
	out := make([]runtime.Object, n)
	for i := range out {
		out[i] = &metav1.PartialObjectMetadata{}
	}
	return out
}

// Usage is counted in the quota's own cluster and namespace; status.hard
// follows spec.hard; an unchanged status is not written again.
func TestUsageCountsObjectsOfTheQuotasClusterAndNamespace(t *testing.T) {
	counts := map[string]int{
		"a|team|configmaps":          2,
		"a|team|secrets":             3,
		"a|team|widgets.example.com": 1,
		"b|team|configmaps":          7,
		"a|other|configmaps":         9,
	}
	var written []*corev1.ResourceQuota
	u := &usage{
		list: func(_ context.Context, cluster logicalcluster.Name, gr schema.GroupResource, ns string) ([]runtime.Object, error) {
			return objects(counts[string(cluster)+"|"+ns+"|"+gr.String()]), nil
		},
		updateStatus: func(_ context.Context, cluster logicalcluster.Name, q *corev1.ResourceQuota) error {
			if cluster != "a" {
				t.Errorf("status written in cluster %s", cluster)
			}
			written = append(written, q)
			return nil
		},
	}
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "q"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			"configmaps":                resource.MustParse("5"),
			"count/secrets":             resource.MustParse("5"),
			"count/widgets.example.com": resource.MustParse("5"),
			"count/gadgets.example.com": resource.MustParse("5"),
		}},
	}
	if err := u.reconcile(context.Background(), "a", q); err != nil {
		t.Fatal(err)
	}
	if len(written) != 1 {
		t.Fatalf("status written %d times, want 1", len(written))
	}
	got := written[0].Status
	want := map[corev1.ResourceName]int64{"configmaps": 2, "count/secrets": 3, "count/widgets.example.com": 1, "count/gadgets.example.com": 0}
	for name, n := range want {
		if v, ok := got.Used[name]; !ok || v.Value() != n {
			t.Errorf("used[%s] = %v, want %d", name, got.Used[name], n)
		}
	}
	if len(got.Used) != len(want) || !reflect.DeepEqual(got.Hard, q.Spec.Hard) {
		t.Errorf("status = %+v", got)
	}

	if err := u.reconcile(context.Background(), "a", written[0]); err != nil {
		t.Fatal(err)
	}
	if len(written) != 1 {
		t.Errorf("an unchanged status was written again")
	}
}
