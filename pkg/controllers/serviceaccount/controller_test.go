package serviceaccount

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// TestOnlyChangedOrDeletedObjectsRequeueTheirNamespace: a default service
// account or root CA config map that appears (mostly one this controller
// just created) brings its namespace back to nobody; one that changes or
// goes does, as upstream's controllers watch them.
func TestOnlyChangedOrDeletedObjectsRequeueTheirNamespace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	keys := make(chan string, 10)
	l := loop.New("test-serviceaccount", func(_ context.Context, key string) error {
		keys <- key
		return nil
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(ctx, 1)
	}()
	object := func(cluster, ns string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: RootCAConfigMapName, Annotations: map[string]string{logicalcluster.AnnotationKey: cluster}}}
	}
	h := changedOrDeleted{l}
	h.OnAdd(object("c0", "added"))
	h.OnUpdate(object("c1", "team"), object("c1", "team"))
	h.OnDelete(object("c2", "team"))
	for _, want := range []string{wildcardinformer.Key("c1", "", "team"), wildcardinformer.Key("c2", "", "team")} {
		select {
		case got := <-keys:
			if got != want {
				t.Errorf("reconciled %q, want %q", got, want)
			}
		case <-ctx.Done():
			t.Fatalf("%s was never reconciled", want)
		}
	}
	cancel()
	<-done
	if len(keys) > 0 {
		t.Errorf("an added object requeued its namespace: %q", <-keys)
	}
}
