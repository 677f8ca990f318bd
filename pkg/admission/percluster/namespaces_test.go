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
	clients, err := c.NewClusterClients("provider")
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
