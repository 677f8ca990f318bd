package logicalclusterdump

import (
	"context"
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"

	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/storage/embeddedetcd/etcdtest"
)

func as(groups []string, cluster logicalcluster.Name) context.Context {
	ctx := request.WithUser(context.Background(), &user.DefaultInfo{Name: "someone", Groups: groups})
	return logicalcluster.WithCluster(ctx, cluster)
}

func TestDumpsPageTheRequestClusterForTheSystemOnly(t *testing.T) {
	kv := etcdtest.Start(t).Client().KV
	for i := range 5 {
		if _, err := kv.Put(context.Background(), fmt.Sprintf("/registry/core/configmaps/moving/default/cm-%d", i), "0123456789"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := kv.Put(context.Background(), "/registry/core/configmaps/other/default/cm", "x"); err != nil {
		t.Fatal(err)
	}
	r := NewREST(func() clientv3.KV { return kv }, "/registry")
	system := as([]string{"system:kcp:logical-cluster-admin"}, "moving")

	var keys []string
	dump := &migrationv1alpha1.LogicalClusterDump{Spec: migrationv1alpha1.LogicalClusterDumpSpec{MaxBytes: 15}}
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("the dump never ends")
		}
		out, err := r.Create(system, dump, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		page := out.(*migrationv1alpha1.LogicalClusterDump)
		if len(page.Status.Entries) > 2 {
			t.Fatalf("a page of %d entries of 10 bytes, want at most 2 for maxBytes 15", len(page.Status.Entries))
		}
		for _, e := range page.Status.Entries {
			keys = append(keys, e.Key)
		}
		if page.Status.Continue == "" {
			break
		}
		dump.Spec.Continue = page.Status.Continue
	}
	if len(keys) != 5 || keys[0] != "core/configmaps/moving/default/cm-0" {
		t.Fatalf("dumped %v, want the 5 configmaps of the cluster", keys)
	}

	for name, tc := range map[string]struct {
		ctx   context.Context
		dump  *migrationv1alpha1.LogicalClusterDump
		check func(error) bool
	}{
		"a workspace admin":  {ctx: as([]string{"system:authenticated"}, "moving"), dump: &migrationv1alpha1.LogicalClusterDump{}, check: apierrors.IsForbidden},
		"across clusters":    {ctx: as([]string{"system:masters"}, logicalcluster.Wildcard), dump: &migrationv1alpha1.LogicalClusterDump{}, check: apierrors.IsBadRequest},
		"a forged continue":  {ctx: system, dump: &migrationv1alpha1.LogicalClusterDump{Spec: migrationv1alpha1.LogicalClusterDumpSpec{Continue: "bm90LWEtdG9rZW4"}}, check: apierrors.IsBadRequest},
		"a negative limit":   {ctx: system, dump: &migrationv1alpha1.LogicalClusterDump{Spec: migrationv1alpha1.LogicalClusterDumpSpec{Limit: -1}}, check: apierrors.IsBadRequest},
		"a shard without kv": {ctx: system, dump: &migrationv1alpha1.LogicalClusterDump{}, check: apierrors.IsServiceUnavailable},
	} {
		rr := r
		if name == "a shard without kv" {
			rr = NewREST(nil, "/registry")
		}
		if _, err := rr.Create(tc.ctx, tc.dump, nil, nil); !tc.check(err) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
