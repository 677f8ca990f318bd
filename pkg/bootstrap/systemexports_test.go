package bootstrap

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

func TestParseIdentitiesReadsKCPsFormat(t *testing.T) {
	ids, err := ParseIdentities([]byte("identities:\n- export: tenancy.kcp.io\n  identity: abc\n- export: shards.core.kcp.io\n  identity: def\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 || ids[0] != (Identity{Export: "tenancy.kcp.io", Identity: "abc"}) || ids[1] != (Identity{Export: "shards.core.kcp.io", Identity: "def"}) {
		t.Errorf("identities = %+v", ids)
	}
	for _, tc := range []struct{ name, file, want string }{
		{"unknown field", "identities:\n- export: a\n  key: b\n", "unknown field"},
		{"empty identity", "identities:\n- export: a\n", "empty"},
		{"bad export name", "identities:\n- export: Not_A_Name\n  identity: b\n", "export"},
		{"twice", "identities:\n- export: a\n  identity: b\n- export: a\n  identity: c\n", "twice"},
	} {
		if _, err := ParseIdentities([]byte(tc.file)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}

func TestSeedIdentitiesCreatesSecretsOnceAndNeverChangesThem(t *testing.T) {
	ctx := context.Background()
	existing := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kcp-system", Name: "shards.core.kcp.io"},
		Data:       map[string][]byte{"key": []byte("earlier")},
	}
	c := fake.NewSimpleClientset(existing)
	ids := []Identity{{Export: "tenancy.kcp.io", Identity: "given"}, {Export: "shards.core.kcp.io", Identity: "later"}}
	for range 2 {
		if err := seedIdentities(ctx, c, ids); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]string{"tenancy.kcp.io": "given", "shards.core.kcp.io": "earlier"} {
		s, err := c.CoreV1().Secrets("kcp-system").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := string(s.Data["key"]); got != want {
			t.Errorf("secret %s has key %q, want %q", name, got, want)
		}
	}
	if _, err := c.CoreV1().Namespaces().Get(ctx, "kcp-system", metav1.GetOptions{}); err != nil {
		t.Errorf("namespace kcp-system: %v", err)
	}
}

func TestSystemExportIdentityReadsRootsExports(t *testing.T) {
	exports := func(objs ...*apisv1alpha2.APIExport) *wildcardinformer.Informer {
		inf := wildcardinformer.New(&cache.ListWatch{}, &apisv1alpha2.APIExport{}, "test-apiexports")
		for _, o := range objs {
			if err := inf.Indexer().Add(o); err != nil {
				t.Fatal(err)
			}
		}
		return inf
	}
	export := func(cluster logicalcluster.Name, name, hash string) *apisv1alpha2.APIExport {
		return &apisv1alpha2.APIExport{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{logicalcluster.AnnotationKey: string(cluster)}},
			Status:     apisv1alpha2.APIExportStatus{IdentityHash: hash},
		}
	}
	local := exports(export("other", "tenancy.kcp.io", "not-root"), export(logicalcluster.Root, "shards.core.kcp.io", ""))
	fromRoot := exports(export(logicalcluster.Root, "tenancy.kcp.io", "h1"))
	lookup := SystemExportIdentity(local, fromRoot)
	for _, tc := range []struct {
		group, resource, want string
		ok                    bool
	}{
		{"tenancy.kcp.io", "workspaces", "h1", true},
		{"tenancy.kcp.io", "workspacetypes", "h1", true},
		{"core.kcp.io", "shards", "", false}, // no identity yet
		{"core.kcp.io", "logicalclusters", "", false},
		{"example.io", "widgets", "", false},
	} {
		got, ok := lookup(tc.group, tc.resource)
		if got != tc.want || ok != tc.ok {
			t.Errorf("identity of %s.%s = %q, %v; want %q, %v", tc.resource, tc.group, got, ok, tc.want, tc.ok)
		}
	}
}
