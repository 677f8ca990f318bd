package cacheserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/shardplane/shardplane/pkg/cacheclient"
)

func TestCreateKeepsTheUIDAndCreationTimeTheWriterSent(t *testing.T) {
	var sent *writtenMeta
	h := withCreateMeta(func(_ http.ResponseWriter, req *http.Request) { sent = writtenMetaFrom(req.Context()) }, 1<<20)
	for _, tc := range []struct{ contentType, body string }{
		{"application/json", `{"apiVersion":"apis.kcp.io/v1alpha2","kind":"APIExport","metadata":{"name":"e","uid":"u-1","creationTimestamp":"2020-01-02T03:04:05Z"}}`},
		{"application/yaml", "apiVersion: apis.kcp.io/v1alpha2\nkind: APIExport\nmetadata:\n  name: e\n  uid: u-1\n  creationTimestamp: \"2020-01-02T03:04:05Z\"\n"},
	} {
		req := httptest.NewRequest(http.MethodPost, "/apis/apis.kcp.io/v1alpha2/apiexports", strings.NewReader(tc.body))
		req.Header.Set("Content-Type", tc.contentType)
		h(httptest.NewRecorder(), req)
		if sent == nil || sent.uid != "u-1" || sent.created.UTC().Format("2006-01-02T15:04:05Z") != "2020-01-02T03:04:05Z" {
			t.Fatalf("%s: recorded %+v", tc.contentType, sent)
		}

		// The generic handler erased them from the object; the strategy
		// puts them back after the registry filled in its own.
		obj := &unstructured.Unstructured{}
		obj.SetUID("generated")
		obj.SetCreationTimestamp(metav1.Now())
		obj.SetGeneration(3)
		w := *sent
		w.record(obj)
		newReplicaStrategy(cacheclient.Kinds[0]).PrepareForCreate(withWrittenMeta(context.Background(), &w), obj)
		if obj.GetUID() != "u-1" || !obj.GetCreationTimestamp().Time.Equal(sent.created.Time) || obj.GetGeneration() != 3 {
			t.Errorf("%s: uid %q created %v generation %d, want the writer's", tc.contentType, obj.GetUID(), obj.GetCreationTimestamp(), obj.GetGeneration())
		}
	}
}

func TestUpdateKeepsTheGenerationTheWriterSent(t *testing.T) {
	s := newReplicaStrategy(cacheclient.Kinds[0])
	old := &unstructured.Unstructured{}
	old.SetGeneration(2)
	for _, tc := range []struct {
		sent, want int64
	}{{sent: 5, want: 5}, {sent: 0, want: 2}} {
		obj := &unstructured.Unstructured{}
		obj.SetGeneration(2) // the registry resets it to the stored one
		s.PrepareForUpdate(withWrittenMeta(context.Background(), &writtenMeta{generation: tc.sent}), obj, old)
		if obj.GetGeneration() != tc.want {
			t.Errorf("sent %d: generation %d, want %d", tc.sent, obj.GetGeneration(), tc.want)
		}
	}
	fresh := &unstructured.Unstructured{}
	s.PrepareForCreate(context.Background(), fresh)
	if fresh.GetGeneration() != 1 {
		t.Errorf("a replica created without a generation has %d, want 1", fresh.GetGeneration())
	}
}

func TestReplicaMetadataIsValidated(t *testing.T) {
	s := newReplicaStrategy(cacheclient.Kind{Namespaced: true})
	obj := &unstructured.Unstructured{}
	obj.SetName("a/b")
	if errs := s.Validate(context.Background(), obj); len(errs) == 0 {
		t.Error("a name with a slash and no namespace passed validation")
	}
	obj.SetName("system:kcp:role")
	obj.SetNamespace("default")
	if errs := s.Validate(context.Background(), obj); len(errs) != 0 {
		t.Errorf("an RBAC-style name was refused: %v", errs)
	}
}
