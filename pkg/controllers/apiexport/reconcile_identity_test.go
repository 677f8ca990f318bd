package apiexport

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// fakeSecrets is a cluster's secrets keyed by namespace/name.
type fakeSecrets struct {
	secrets   map[string]*corev1.Secret
	created   []string
	createErr error
}

func (f *fakeSecrets) reconciler() *identityReconciler {
	return &identityReconciler{
		getSecret: func(_ context.Context, _ logicalcluster.Name, namespace, name string) (*corev1.Secret, error) {
			return f.secrets[namespace+"/"+name].DeepCopy(), nil
		},
		createSecret: func(_ context.Context, _ logicalcluster.Name, s *corev1.Secret) error {
			if f.createErr != nil {
				return f.createErr
			}
			key := s.Namespace + "/" + s.Name
			if _, ok := f.secrets[key]; ok {
				return apierrors.NewAlreadyExists(schema.GroupResource{Resource: "secrets"}, s.Name)
			}
			f.secrets[key] = s.DeepCopy()
			f.created = append(f.created, key)
			return nil
		},
		newKey: func() (string, error) { return "generated", nil },
	}
}

func secret(namespace, name, key string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: map[string][]byte{"key": []byte(key)}}
}

func export(name string, ref *apisv1alpha2.SecretReference, hash string) *apisv1alpha2.APIExport {
	e := &apisv1alpha2.APIExport{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: apisv1alpha2.APIExportStatus{IdentityHash: hash}}
	if ref != nil {
		e.Spec.Identity = &apisv1alpha2.Identity{SecretRef: ref}
	}
	return e
}

func TestIdentityReconcile(t *testing.T) {
	custom := &apisv1alpha2.SecretReference{Namespace: "kcp-system", Name: "custom"}
	for _, tc := range []struct {
		name        string
		export      *apisv1alpha2.APIExport
		secrets     map[string]*corev1.Secret
		createErr   error
		wantCreated []string
		wantHash    string
		wantStatus  corev1.ConditionStatus
		wantReason  string
		wantMessage string
		wantErr     bool
		wantRequeue bool
	}{
		{
			name: "missing default secret is created with a random key", export: export("e", nil, ""),
			wantCreated: []string{"kcp-system/e"}, wantHash: IdentityHash([]byte("generated")), wantStatus: corev1.ConditionTrue,
		},
		{
			name: "existing default secret is used", export: export("e", apisv1alpha2.DefaultIdentitySecretRef("e"), ""),
			secrets:  map[string]*corev1.Secret{"kcp-system/e": secret("kcp-system", "e", "k1")},
			wantHash: IdentityHash([]byte("k1")), wantStatus: corev1.ConditionTrue,
		},
		{
			name: "referenced secret gives the hash", export: export("e", custom, ""),
			secrets:  map[string]*corev1.Secret{"kcp-system/custom": secret("kcp-system", "custom", "shared")},
			wantHash: IdentityHash([]byte("shared")), wantStatus: corev1.ConditionTrue,
		},
		{
			name: "missing referenced secret is not created", export: export("e", custom, ""),
			wantStatus: corev1.ConditionFalse, wantReason: apisv1alpha1.IdentityVerificationFailedReason, wantMessage: "kcp-system/custom does not exist", wantRequeue: true,
		},
		{
			name: "secret without key", export: export("e", custom, ""),
			secrets:    map[string]*corev1.Secret{"kcp-system/custom": {ObjectMeta: metav1.ObjectMeta{Namespace: "kcp-system", Name: "custom"}}},
			wantStatus: corev1.ConditionFalse, wantReason: apisv1alpha1.IdentityVerificationFailedReason, wantMessage: `no data key "key"`, wantRequeue: true,
		},
		{
			name: "swapped key keeps the hash", export: export("e", custom, IdentityHash([]byte("old"))),
			secrets:  map[string]*corev1.Secret{"kcp-system/custom": secret("kcp-system", "custom", "new")},
			wantHash: IdentityHash([]byte("old")), wantStatus: corev1.ConditionFalse, wantReason: apisv1alpha1.IdentityVerificationFailedReason, wantMessage: "never changes", wantRequeue: true,
		},
		{
			name: "failing creation is reported and retried", export: export("e", nil, ""), createErr: errors.New("etcd down"),
			wantStatus: corev1.ConditionFalse, wantReason: apisv1alpha1.IdentityGenerationFailedReason, wantMessage: "etcd down", wantErr: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secrets := tc.secrets
			if secrets == nil {
				secrets = map[string]*corev1.Secret{}
			}
			f := &fakeSecrets{secrets: secrets, createErr: tc.createErr}
			e := tc.export.DeepCopy()
			err := f.reconciler().reconcile(context.Background(), "c", e)
			var requeue loop.RequeueAfter
			switch {
			case tc.wantRequeue && !errors.As(err, &requeue):
				t.Errorf("err = %v, want a requeue", err)
			case tc.wantErr && (err == nil || errors.As(err, &requeue)):
				t.Errorf("err = %v, want a failure", err)
			case !tc.wantErr && !tc.wantRequeue && err != nil:
				t.Errorf("err = %v", err)
			}
			if strings.Join(f.created, ",") != strings.Join(tc.wantCreated, ",") {
				t.Errorf("created %v, want %v", f.created, tc.wantCreated)
			}
			if e.Status.IdentityHash != tc.wantHash {
				t.Errorf("identityHash = %q, want %q", e.Status.IdentityHash, tc.wantHash)
			}
			c := e.Status.Conditions.Get(apisv1alpha1.APIExportIdentityValid)
			if c == nil || c.Status != tc.wantStatus || c.Reason != tc.wantReason || !strings.Contains(c.Message, tc.wantMessage) {
				t.Errorf("IdentityValid = %+v, want %s %s %q", c, tc.wantStatus, tc.wantReason, tc.wantMessage)
			}
		})
	}
}

func TestCreatedSecretAppearingMeanwhileWins(t *testing.T) {
	f := &fakeSecrets{secrets: map[string]*corev1.Secret{}}
	r := f.reconciler()
	get := r.getSecret
	calls := 0
	// The first read misses; someone else creates the secret before us.
	r.getSecret = func(ctx context.Context, c logicalcluster.Name, ns, name string) (*corev1.Secret, error) {
		calls++
		if calls == 1 {
			f.secrets["kcp-system/e"] = secret("kcp-system", "e", "theirs")
			return nil, nil
		}
		return get(ctx, c, ns, name)
	}
	e := export("e", nil, "")
	if err := r.reconcile(context.Background(), "c", e); err != nil {
		t.Fatal(err)
	}
	if e.Status.IdentityHash != IdentityHash([]byte("theirs")) {
		t.Errorf("identityHash = %q, want the hash of the secret that won", e.Status.IdentityHash)
	}
}

func TestIdentityHashIsHexSHA256(t *testing.T) {
	// echo -n abc | sha256sum
	if got := IdentityHash([]byte("abc")); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("IdentityHash(abc) = %s", got)
	}
}

func TestReconcileWritesStatusOnlyOnChange(t *testing.T) {
	f := &fakeSecrets{secrets: map[string]*corev1.Secret{}}
	stored := export("e", nil, "")
	var writes int
	c := &Controller{
		getAPIExport: func(logicalcluster.Name, string) (*apisv1alpha2.APIExport, error) { return stored, nil },
		updateStatus: func(_ context.Context, _ logicalcluster.Name, e *apisv1alpha2.APIExport) error {
			writes++
			stored = e.DeepCopy()
			return nil
		},
		identity: f.reconciler(),
		endpoints: &endpointSliceReconciler{
			sliceExists: func(logicalcluster.Name, string) bool { return true },
		},
	}
	for i := 0; i < 2; i++ {
		if err := c.reconcile(context.Background(), "c|e"); err != nil {
			t.Fatal(err)
		}
	}
	if writes != 1 {
		t.Errorf("%d status writes, want 1", writes)
	}
	if stored.Status.IdentityHash == "" {
		t.Error("no identity hash written")
	}
}
