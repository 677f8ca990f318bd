package serviceaccount

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func tokenSecretFor(sa string, uid string) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "robot-token", UID: "secret-uid",
			Annotations: map[string]string{corev1.ServiceAccountNameKey: sa}},
		Type: corev1.SecretTypeServiceAccountToken,
	}
	if uid != "" {
		s.Annotations[corev1.ServiceAccountUIDKey] = uid
	}
	return s
}

func TestTokenSecretIsFilledOrDeletedAsUpstream(t *testing.T) {
	robot := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "robot", UID: "sa-uid"}}
	for _, tc := range []struct {
		name        string
		secret      *corev1.Secret
		wantDeleted bool
		wantUpdated bool
	}{
		{name: "empty secret of an existing service account", secret: tokenSecretFor("robot", ""), wantUpdated: true},
		{name: "secret of a missing service account", secret: tokenSecretFor("ghost", ""), wantDeleted: true},
		{name: "secret of a recreated service account", secret: tokenSecretFor("robot", "old-uid"), wantDeleted: true},
		{name: "filled secret", secret: func() *corev1.Secret {
			s := tokenSecretFor("robot", "sa-uid")
			s.Data = map[string][]byte{"token": []byte("t"), "ca.crt": []byte("CA"), "namespace": []byte("team")}
			return s
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var updated *corev1.Secret
			deleted := false
			r := &tokenSecret{
				caBundle: []byte("CA"),
				getServiceAccount: func(_ context.Context, cluster logicalcluster.Name, ns, name string) (*corev1.ServiceAccount, error) {
					if cluster != "c" || ns != "team" || name != "robot" {
						return nil, apierrors.NewNotFound(corev1.Resource("serviceaccounts"), name)
					}
					return robot, nil
				},
				generate: func(_ context.Context, cluster logicalcluster.Name, sa *corev1.ServiceAccount, _ *corev1.Secret) (string, error) {
					return "token-of-" + string(cluster) + "-" + sa.Name, nil
				},
				update: func(_ context.Context, _ logicalcluster.Name, s *corev1.Secret) error { updated = s; return nil },
				delete: func(context.Context, logicalcluster.Name, *corev1.Secret) error { deleted = true; return nil },
			}
			if err := r.reconcile(context.Background(), "c", tc.secret); err != nil {
				t.Fatal(err)
			}
			if deleted != tc.wantDeleted || (updated != nil) != tc.wantUpdated {
				t.Fatalf("deleted=%v updated=%v", deleted, updated != nil)
			}
			if updated == nil {
				return
			}
			if string(updated.Data["token"]) != "token-of-c-robot" || string(updated.Data["ca.crt"]) != "CA" || string(updated.Data["namespace"]) != "team" ||
				updated.Annotations[corev1.ServiceAccountUIDKey] != "sa-uid" {
				t.Errorf("filled secret: data %q annotations %v", updated.Data, updated.Annotations)
			}
		})
	}
}
