package wildcardinformer

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func TestFirstReadsTheFirstInformerThatHasTheObject(t *testing.T) {
	own := New(&cache.ListWatch{}, &corev1.ConfigMap{}, "own")
	global := New(&cache.ListWatch{}, &corev1.ConfigMap{}, "global")
	for _, add := range []struct {
		inf *Informer
		obj *corev1.ConfigMap
	}{{own, cm("a", "ns", "both")}, {global, cm("a", "ns", "both")}, {global, cm("root", "ns", "global-only")}} {
		add.obj.Data = map[string]string{"from": add.inf.Name()}
		if err := add.inf.Indexer().Add(add.obj); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		cluster    logicalcluster.Name
		name, from string
	}{
		{"a", "both", "own"},
		{"root", "global-only", "global"},
		{"a", "none", ""},
	} {
		obj, exists, err := First(tc.cluster, "ns", tc.name, nil, own, global)
		switch {
		case err != nil:
			t.Errorf("%s/%s: %v", tc.cluster, tc.name, err)
		case tc.from == "" && exists:
			t.Errorf("%s/%s: found %v, want nothing", tc.cluster, tc.name, obj)
		case tc.from != "" && (!exists || obj.(*corev1.ConfigMap).Data["from"] != tc.from):
			t.Errorf("%s/%s: %v %v, want the object of %s", tc.cluster, tc.name, obj, exists, tc.from)
		}
	}
}
