package serviceaccount

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func TestDefaultServiceAccountIsCreatedWhenMissing(t *testing.T) {
	for _, exists := range []bool{false, true} {
		var created []string
		r := &defaultServiceAccount{
			get: func(logicalcluster.Name, string) bool { return exists },
			create: func(_ context.Context, cluster logicalcluster.Name, sa *corev1.ServiceAccount) error {
				created = append(created, string(cluster)+"|"+sa.Namespace+"/"+sa.Name)
				return nil
			},
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}
		if err := r.reconcile(context.Background(), "c", ns); err != nil {
			t.Fatal(err)
		}
		want := 1
		if exists {
			want = 0
		}
		if len(created) != want || (want == 1 && created[0] != "c|team/default") {
			t.Errorf("exists=%v: created %v", exists, created)
		}
	}
}

func TestRootCAConfigMapIsCreatedAndRepaired(t *testing.T) {
	good := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: RootCAConfigMapName, Annotations: map[string]string{descriptionAnnotation: rootCADescription}},
		Data:       map[string]string{RootCAKey: "CA"},
	}
	tampered := good.DeepCopy()
	tampered.Data[RootCAKey] = "other"
	extraKey := good.DeepCopy()
	extraKey.Data["x"] = "y"
	tests := []struct {
		name               string
		existing           *corev1.ConfigMap
		wantCreate, wantUp bool
	}{
		{"missing", nil, true, false},
		{"up to date", good, false, false},
		{"other CA", tampered, false, true},
		{"extra key", extraKey, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var wrote *corev1.ConfigMap
			var created, updated bool
			r := &rootCA{
				caBundle: "CA",
				get:      func(logicalcluster.Name, string) *corev1.ConfigMap { return tt.existing },
				create: func(_ context.Context, _ logicalcluster.Name, cm *corev1.ConfigMap) error {
					created, wrote = true, cm
					return nil
				},
				update: func(_ context.Context, _ logicalcluster.Name, cm *corev1.ConfigMap) error {
					updated, wrote = true, cm
					return nil
				},
			}
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}
			if err := r.reconcile(context.Background(), "c", ns); err != nil {
				t.Fatal(err)
			}
			if created != tt.wantCreate || updated != tt.wantUp {
				t.Fatalf("created=%v updated=%v, want %v %v", created, updated, tt.wantCreate, tt.wantUp)
			}
			if wrote != nil && (len(wrote.Data) != 1 || wrote.Data[RootCAKey] != "CA") {
				t.Errorf("wrote data %v", wrote.Data)
			}
		})
	}
}

// TestNamespaceObjectsAreWhatTheControllerCreates: a namespace created
// with NamespaceObjects holds what the controller would have created.
func TestNamespaceObjectsAreWhatTheControllerCreates(t *testing.T) {
	var created []runtime.Object
	sa := &defaultServiceAccount{
		get: func(logicalcluster.Name, string) bool { return false },
		create: func(_ context.Context, _ logicalcluster.Name, sa *corev1.ServiceAccount) error {
			created = append(created, sa)
			return nil
		},
	}
	ca := &rootCA{
		caBundle: "CA",
		get:      func(logicalcluster.Name, string) *corev1.ConfigMap { return nil },
		create: func(_ context.Context, _ logicalcluster.Name, cm *corev1.ConfigMap) error {
			created = append(created, cm)
			return nil
		},
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}
	for _, r := range []reconciler{sa, ca} {
		if err := r.reconcile(context.Background(), "c", ns); err != nil {
			t.Fatal(err)
		}
	}
	if want := NamespaceObjects("team", []byte("CA")); !apiequality.Semantic.DeepEqual(created, want) {
		t.Errorf("controller created %v, NamespaceObjects are %v", created, want)
	}
}

// TestObjectsStoredButNotYetInTheInformerAreNotCreatedAgain: a new
// cluster's bootstrap stores a namespace's objects just before the
// namespace, and their informers may lag its; what the storage holds is
// not created again (each such create was a refused POST), and the config
// map's content is looked at once its informer shows it. A failed look
// leaves the decision to the create.
func TestObjectsStoredButNotYetInTheInformerAreNotCreatedAgain(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}
	for _, tt := range []struct {
		name       string
		stored     func(context.Context, logicalcluster.Name, string) (bool, error)
		wantCreate bool
	}{
		{"stored", func(context.Context, logicalcluster.Name, string) (bool, error) { return true, nil }, false},
		{"not stored", func(context.Context, logicalcluster.Name, string) (bool, error) { return false, nil }, true},
		{"unknown", func(context.Context, logicalcluster.Name, string) (bool, error) {
			return false, errors.New("etcd unavailable")
		}, true},
		{"no means to tell", nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var created []string
			sa := &defaultServiceAccount{
				get:    func(logicalcluster.Name, string) bool { return false },
				stored: tt.stored,
				create: func(_ context.Context, _ logicalcluster.Name, sa *corev1.ServiceAccount) error {
					created = append(created, "sa")
					return nil
				},
			}
			cm := &rootCA{
				caBundle: "CA",
				get:      func(logicalcluster.Name, string) *corev1.ConfigMap { return nil },
				stored:   tt.stored,
				create: func(_ context.Context, _ logicalcluster.Name, cm *corev1.ConfigMap) error {
					created = append(created, "cm")
					return nil
				},
			}
			if err := sa.reconcile(context.Background(), "c", ns); err != nil {
				t.Fatal(err)
			}
			err := cm.reconcile(context.Background(), "c", ns)
			var after loop.RequeueAfter
			if tt.wantCreate {
				if err != nil {
					t.Fatal(err)
				}
				if want := []string{"sa", "cm"}; !slices.Equal(created, want) {
					t.Errorf("created %v, want %v", created, want)
				}
				return
			}
			if len(created) > 0 {
				t.Errorf("created %v of stored objects", created)
			}
			if !errors.As(err, &after) {
				t.Errorf("the stored config map's content is not looked at again: %v", err)
			}
		})
	}
}
