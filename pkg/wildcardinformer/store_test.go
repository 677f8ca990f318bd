package wildcardinformer

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func secret(cluster, namespace, name, owner string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Namespace:   namespace,
		Name:        name,
		Annotations: map[string]string{logicalcluster.AnnotationKey: cluster},
		Labels:      map[string]string{"owner": owner},
	}}
}

func byOwner(obj interface{}) ([]string, error) {
	return []string{obj.(*corev1.Secret).Labels["owner"]}, nil
}

func keysOf(objs []interface{}) []string {
	var keys []string
	for _, obj := range objs {
		key, _ := KeyFunc(obj)
		keys = append(keys, key)
	}
	slices.Sort(keys)
	return keys
}

// TestStoreAgreesWithClientGo replays random adds, updates and deletes on
// the store and on client-go's indexer with the same indexes, and compares
// every answer: clusters whose names are prefixes of each other, namespaces
// and cluster-scoped objects, and an index value with more keys than fit in
// a slice.
func TestStoreAgreesWithClientGo(t *testing.T) {
	clusters := []string{"root", "root:a", "root:ab", "root:a:b", "r"}
	namespaces := []string{"", "default", "def", "kube-system"}
	owners := []string{"x", "y"}
	for _, n := range []int{10, 300} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			rnd := rand.New(rand.NewSource(int64(n)))
			s := newStore()
			if err := s.AddIndexers(cache.Indexers{"owner": byOwner}); err != nil {
				t.Fatal(err)
			}
			want := cache.NewIndexer(KeyFunc, cache.Indexers{ByCluster: clusterIndex, ByClusterNamespace: clusterNamespaceIndex, "owner": byOwner})
			for i := 0; i < n; i++ {
				obj := secret(clusters[rnd.Intn(len(clusters))], namespaces[rnd.Intn(len(namespaces))], fmt.Sprint("s", rnd.Intn(n/3+1)), owners[rnd.Intn(len(owners))])
				if rnd.Intn(4) == 0 {
					mustNot(t, s.Delete(obj), want.Delete(obj))
				} else {
					mustNot(t, s.Add(obj), want.Add(obj))
				}
			}
			compareStores(t, s, want, clusters, namespaces, owners)
			// A new index is filled from the objects already held.
			byName := cache.Indexers{"name": func(obj interface{}) ([]string, error) { return []string{obj.(*corev1.Secret).Name}, nil }}
			mustNot(t, s.AddIndexers(byName), want.AddIndexers(byName))
			for i := 0; i <= n/3; i++ {
				got, _ := s.ByIndex("name", fmt.Sprint("s", i))
				exp, _ := want.ByIndex("name", fmt.Sprint("s", i))
				if !slices.Equal(keysOf(got), keysOf(exp)) {
					t.Errorf("name s%d: %v, want %v", i, keysOf(got), keysOf(exp))
				}
			}
			// Replace starts over.
			list := want.List()[:len(want.List())/2]
			mustNot(t, s.Replace(list, "7"), want.Replace(list, "7"))
			if rv := s.LastStoreSyncResourceVersion(); rv != "7" {
				t.Errorf("resource version after Replace %q, want 7", rv)
			}
			compareStores(t, s, want, clusters, namespaces, owners)
		})
	}
}

func mustNot(t *testing.T, errs ...error) {
	t.Helper()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func compareStores(t *testing.T, s *store, want cache.Indexer, clusters, namespaces, owners []string) {
	t.Helper()
	if got, exp := s.ListKeys(), want.ListKeys(); !slices.Equal(got, sorted(exp)) {
		t.Errorf("keys %v, want %v", got, sorted(exp))
	}
	if got, exp := keysOf(s.List()), keysOf(want.List()); !slices.Equal(got, exp) {
		t.Errorf("list %v, want %v", got, exp)
	}
	for _, key := range want.ListKeys() {
		got, ok, _ := s.GetByKey(key)
		exp, _, _ := want.GetByKey(key)
		if !ok || got != exp {
			t.Errorf("GetByKey(%s) = %v, %v", key, got, ok)
		}
	}
	check := func(index, value string) {
		t.Helper()
		got, err := s.ByIndex(index, value)
		if err != nil {
			t.Fatal(err)
		}
		exp, _ := want.ByIndex(index, value)
		if !slices.Equal(keysOf(got), keysOf(exp)) {
			t.Errorf("ByIndex(%s, %s) = %v, want %v", index, value, keysOf(got), keysOf(exp))
		}
		gotKeys, _ := s.IndexKeys(index, value)
		expKeys, _ := want.IndexKeys(index, value)
		if !slices.Equal(sorted(gotKeys), sorted(expKeys)) {
			t.Errorf("IndexKeys(%s, %s) = %v, want %v", index, value, gotKeys, expKeys)
		}
	}
	for _, c := range clusters {
		check(ByCluster, c)
		for _, ns := range namespaces[1:] {
			check(ByClusterNamespace, c+"|"+ns)
		}
	}
	for _, o := range owners {
		check("owner", o)
	}
	for _, index := range []string{ByCluster, ByClusterNamespace, "owner"} {
		if got, exp := sorted(s.ListIndexFuncValues(index)), sorted(want.ListIndexFuncValues(index)); !slices.Equal(got, exp) {
			t.Errorf("ListIndexFuncValues(%s) = %v, want %v", index, got, exp)
		}
	}
	probe := secret("root:a", "default", "probe", "x")
	for _, index := range []string{ByCluster, ByClusterNamespace, "owner"} {
		got, _ := s.Index(index, probe)
		exp, _ := want.Index(index, probe)
		if !slices.Equal(keysOf(got), keysOf(exp)) {
			t.Errorf("Index(%s) = %v, want %v", index, keysOf(got), keysOf(exp))
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestStoreErrors(t *testing.T) {
	s := newStore()
	if _, err := s.ByIndex("nope", "x"); err == nil {
		t.Error("ByIndex of an unknown index succeeded")
	}
	if err := s.AddIndexers(cache.Indexers{ByCluster: clusterIndex}); err == nil {
		t.Error("AddIndexers replaced ByCluster")
	}
	if err := s.Add(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "a"}}); err == nil {
		t.Error("Add of an object without a cluster succeeded")
	}
	if got := s.GetIndexers(); got[ByCluster] == nil || got[ByClusterNamespace] == nil {
		t.Errorf("GetIndexers = %v", got)
	}
}

// After a mass deletion an index's maps are made anew, sized for what is
// left, and a value's keys go back to a slice; what is left stays indexed.
func TestStoreShrinksItsIndexesAfterAMassDeletion(t *testing.T) {
	s := newStore()
	byName := cache.Indexers{"name": func(obj interface{}) ([]string, error) { return []string{obj.(*corev1.Secret).Name}, nil }}
	mustNot(t, s.AddIndexers(cache.Indexers{"owner": byOwner}), s.AddIndexers(byName))
	const n = 4 * shrinkAt
	for c := 0; c < n; c++ {
		mustNot(t, s.Add(secret(fmt.Sprint("c", c), "default", fmt.Sprint("s", c), "x")))
	}
	if k := s.indices["owner"]["x"]; k.many == nil || k.peak != n {
		t.Fatalf("owner x: %d keys in a set (peak %d), want all %d", k.len(), k.peak, n)
	}
	if s.peaks["name"] != n {
		t.Fatalf("name index peak %d, want %d", s.peaks["name"], n)
	}
	for c := 0; c < n-3; c++ {
		mustNot(t, s.Delete(secret(fmt.Sprint("c", c), "default", fmt.Sprint("s", c), "x")))
	}
	if k := s.indices["owner"]["x"]; k.many != nil || len(k.few) != 3 {
		t.Errorf("owner x after deleting all but 3: set %v, slice %v; want a slice of 3", k.many, k.few)
	}
	if p := s.peaks["name"]; p >= n/4 {
		t.Errorf("name index peak %d after deleting all but 3: its map was not made anew", p)
	}
	for c := n - 3; c < n; c++ {
		if got, _ := s.ByIndex("name", fmt.Sprint("s", c)); len(got) != 1 {
			t.Errorf("s%d: %d objects by name after the shrink, want 1", c, len(got))
		}
		if got, _ := s.ByIndex(ByCluster, fmt.Sprint("c", c)); len(got) != 1 {
			t.Errorf("cluster c%d lists %d objects, want 1", c, len(got))
		}
	}
	if got, _ := s.ByIndex("owner", "x"); len(got) != 3 {
		t.Errorf("owner x: %d objects, want 3", len(got))
	}
}
