package objectcount

import (
	"context"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// pagedKV answers keys-only range reads from a sorted key list, two keys a
// page, as etcd does with a limit.
type pagedKV struct {
	clientv3.KV
	keys []string
}

func (p pagedKV) Get(_ context.Context, key string, _ ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	resp := &clientv3.GetResponse{}
	for _, k := range p.keys {
		if k < key {
			continue
		}
		if len(resp.Kvs) == 2 {
			resp.More = true
			break
		}
		resp.Kvs = append(resp.Kvs, &mvccpb.KeyValue{Key: []byte(k)})
	}
	return resp, nil
}

func TestScanCountsEachClustersKeysButEvents(t *testing.T) {
	keys := []string{
		"/registry/apis.kcp.io/apibindings/abc/tenancy.kcp.io",
		"/registry/core/configmaps/abc/default/a",
		"/registry/core/configmaps/abc/default/b",
		"/registry/core/configmaps/xyz/default/a",
		"/registry/core/events/abc/default/e1",
		"/registry/core/namespaces/abc/default",
		"/registry/core/namespaces/system:admin/default",
		"/registry/wildwest.dev/cowboys/3f2a9c/abc/default/joe", // bound: identity first
		"/registry/core/configmaps/unknown/default/a",
	}
	r := NewRegistry(10)
	s := &Scanner{KV: pagedKV{keys: keys}, Prefix: "/registry", Registry: r, Clusters: func() ([]Cluster, error) {
		return []Cluster{{Name: "abc"}, {Name: "xyz"}}, nil
	}}
	s.scan(context.Background())
	if !r.Active() {
		t.Fatal("a default limit leaves counting off")
	}
	for cluster, want := range map[logicalcluster.Name]int64{"abc": 5, "xyz": 1, "system:admin": 1, "unknown": 0} {
		if got := r.Count(cluster); got != want {
			t.Errorf("%s: %d objects, want %d", cluster, got, want)
		}
	}
	r.Add("abc", 1)
	r.Add("abc", -3)
	if got := r.Count("abc"); got != 3 {
		t.Errorf("after admission's changes: %d, want 3", got)
	}
	s.scan(context.Background())
	if got := r.Count("abc"); got != 5 {
		t.Errorf("a scan replaces the counts: %d, want 5", got)
	}
}

func TestNoLimitNoScan(t *testing.T) {
	r := NewRegistry(0)
	s := &Scanner{KV: pagedKV{keys: []string{strings.Repeat("x", 3)}}, Prefix: "/registry", Registry: r, Clusters: func() ([]Cluster, error) {
		return []Cluster{{Name: "abc", Annotations: map[string]string{corev1alpha1.MaxTotalObjectsAnnotationKey: "0"}}}, nil
	}}
	s.scan(context.Background())
	if r.Active() {
		t.Error("counting is on without any limit")
	}
}

func TestLimitOfAClusterAsKCPResolvesIt(t *testing.T) {
	r := NewRegistry(60)
	limit := func(v string) map[string]string {
		return map[string]string{corev1alpha1.MaxTotalObjectsAnnotationKey: v}
	}
	for _, tc := range []struct {
		cluster     logicalcluster.Name
		annotations map[string]string
		want        int64
	}{
		{"abc", nil, 60},
		{"abc", limit("40"), 40},
		{"abc", limit("0"), 0},
		{"abc", limit("many"), 60},
		{"root", nil, 0},
		{"system:admin", nil, 0},
		{"root", limit("1000"), 1000},
	} {
		if got := r.LimitFor(tc.cluster, tc.annotations); got != tc.want {
			t.Errorf("%s %v: limit %d, want %d", tc.cluster, tc.annotations, got, tc.want)
		}
	}
}
