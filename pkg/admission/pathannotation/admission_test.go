package pathannotation

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func TestPathIsTheClustersWhateverTheClientSays(t *testing.T) {
	paths := map[logicalcluster.Name]logicalcluster.Path{"c1": "root:org:provider"}
	p := New(func(c logicalcluster.Name) logicalcluster.Path { return paths[c] })
	export := func(annotations map[string]string) *apisv1alpha2.APIExport {
		return &apisv1alpha2.APIExport{ObjectMeta: metav1.ObjectMeta{Name: "e", Annotations: annotations}}
	}
	exports := apisv1alpha2.SchemeGroupVersion.WithResource("apiexports")
	for _, tc := range []struct {
		name     string
		cluster  logicalcluster.Name
		obj      *apisv1alpha2.APIExport
		want     string
		wantNone bool
	}{
		{"set on create", "c1", export(nil), "root:org:provider", false},
		{"a forged path is replaced", "c1", export(map[string]string{"kcp.io/path": "root:victim"}), "root:org:provider", false},
		{"root without a LogicalCluster path", "root", export(nil), "root", false},
		{"a cluster without a path drops a client's", "c2", export(map[string]string{"kcp.io/path": "root:victim"}), "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := logicalcluster.WithCluster(context.Background(), tc.cluster)
			a := admission.NewAttributesRecord(tc.obj, nil, apisv1alpha2.SchemeGroupVersion.WithKind("APIExport"), "", "e", exports, "", admission.Create, nil, false, nil)
			if err := p.Admit(ctx, a, nil); err != nil {
				t.Fatal(err)
			}
			got, has := tc.obj.Annotations["kcp.io/path"]
			if tc.wantNone && has || !tc.wantNone && got != tc.want {
				t.Errorf("kcp.io/path = %q (set %v), want %q", got, has, tc.want)
			}
		})
	}
	// Other kinds are left alone, WorkspaceTypes are annotated.
	lc := &corev1alpha1.LogicalCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
	ctx := logicalcluster.WithCluster(context.Background(), "c1")
	a := admission.NewAttributesRecord(lc, nil, corev1alpha1.SchemeGroupVersion.WithKind("LogicalCluster"), "", "cluster", corev1alpha1.SchemeGroupVersion.WithResource("logicalclusters"), "", admission.Create, nil, false, nil)
	if err := p.Admit(ctx, a, nil); err != nil || lc.Annotations != nil {
		t.Errorf("LogicalCluster annotated: %v, %v", lc.Annotations, err)
	}
	wt := &tenancyv1alpha1.WorkspaceType{ObjectMeta: metav1.ObjectMeta{Name: "t"}}
	a = admission.NewAttributesRecord(wt, nil, tenancyv1alpha1.SchemeGroupVersion.WithKind("WorkspaceType"), "", "t", tenancyv1alpha1.SchemeGroupVersion.WithResource("workspacetypes"), "", admission.Update, nil, false, nil)
	if err := p.Admit(ctx, a, nil); err != nil || wt.Annotations["kcp.io/path"] != "root:org:provider" {
		t.Errorf("WorkspaceType annotations %v, %v", wt.Annotations, err)
	}
}
