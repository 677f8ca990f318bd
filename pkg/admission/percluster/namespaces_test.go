package percluster

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func TestNamespaceReadsGoToTheRequestsCluster(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	}))
	defer srv.Close()
	c := Config{Loopback: &rest.Config{Host: srv.URL}}
	clients, err := c.NewClusterClients(context.Background(), "provider")
	if err != nil {
		t.Fatal(err)
	}
	ctx := logicalcluster.WithCluster(context.Background(), "consumer")
	if _, err := clients.Kube.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := clients.Kube.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"/clusters/consumer/api/v1/namespaces/default", "/clusters/provider/api/v1/namespaces/default"}
	if len(paths) != 2 || paths[0] != want[0] || paths[1] != want[1] {
		t.Errorf("namespace reads went to %v, want %v", paths, want)
	}
}

// TestForeignInstancesSeeNoNamespaceOfTheirCluster: the instance judging
// other clusters' requests has an empty namespace informer, so a namespace
// of the export's cluster never stands in for the consumer's of the same
// name (the plugins then read it from the request's cluster).
func TestForeignInstancesSeeNoNamespaceOfTheirCluster(t *testing.T) {
	c := Config{Loopback: &rest.Config{Host: "https://127.0.0.1:1"}}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), foreignKey{}, true))
	defer cancel()
	clients, err := c.NewClusterClients(ctx, "provider")
	if err != nil {
		t.Fatal(err)
	}
	lister := clients.Informers.Core().V1().Namespaces().Lister()
	clients.Informers.Start(ctx.Done())
	for typ, synced := range clients.Informers.WaitForCacheSync(ctx.Done()) {
		if !synced {
			t.Fatalf("informer of %v never synced", typ)
		}
	}
	if _, err := lister.Get("default"); err == nil {
		t.Errorf("the foreign instance's namespace lister found default")
	}
}
