package apiexport

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// recheckInvalidIdentity is how often an export whose identity secret is
// missing or unusable looks again: secrets are not watched.
const recheckInvalidIdentity = 10 * time.Second

// IdentityHash is the identity hash of an identity key: its hex SHA-256.
func IdentityHash(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:])
}

// NewIdentityKey is a new random identity key, as the default identity
// secrets hold it: 32 random bytes, hex-encoded.
func NewIdentityKey() (string, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return "", err
	}
	return hex.EncodeToString(key), nil
}

// identityReconciler sets status.identityHash and IdentityValid from the
// export's identity secret, creating the default secret when absent.
type identityReconciler struct {
	// getSecret reads a secret; nil when it does not exist.
	getSecret func(ctx context.Context, cluster logicalcluster.Name, namespace, name string) (*corev1.Secret, error)
	// createSecret creates a secret, and its namespace when missing.
	createSecret func(ctx context.Context, cluster logicalcluster.Name, secret *corev1.Secret) error
	// newKey returns a new random identity key.
	newKey func() (string, error)
}

func (r *identityReconciler) reconcile(ctx context.Context, cluster logicalcluster.Name, export *apisv1alpha2.APIExport) error {
	ref := apisv1alpha2.DefaultIdentitySecretRef(export.Name)
	if export.Spec.Identity != nil && export.Spec.Identity.SecretRef != nil {
		ref = export.Spec.Identity.SecretRef.DeepCopy()
		if ref.Namespace == "" {
			ref.Namespace = apisv1alpha2.DefaultIdentitySecretNamespace
		}
	}
	isDefault := ref.Namespace == apisv1alpha2.DefaultIdentitySecretNamespace && ref.Name == export.Name

	secret, err := r.getSecret(ctx, cluster, ref.Namespace, ref.Name)
	if err != nil {
		return fmt.Errorf("get identity secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	if secret == nil && isDefault {
		if secret, err = r.createDefault(ctx, cluster, ref.Namespace, ref.Name); err != nil {
			invalid(export, apisv1alpha1.IdentityGenerationFailedReason, fmt.Sprintf("Creating the identity secret %s/%s failed: %v", ref.Namespace, ref.Name, err))
			return err
		}
	}
	if secret == nil {
		invalid(export, apisv1alpha1.IdentityVerificationFailedReason, fmt.Sprintf("The identity secret %s/%s does not exist; create it with the identity in data key %q, or remove spec.identity to use a generated one", ref.Namespace, ref.Name, apisv1alpha1.SecretKeyAPIExportIdentity))
		return loop.RequeueAfter(recheckInvalidIdentity)
	}
	key := secret.Data[apisv1alpha1.SecretKeyAPIExportIdentity]
	if len(key) == 0 {
		invalid(export, apisv1alpha1.IdentityVerificationFailedReason, fmt.Sprintf("The identity secret %s/%s has no data key %q", ref.Namespace, ref.Name, apisv1alpha1.SecretKeyAPIExportIdentity))
		return loop.RequeueAfter(recheckInvalidIdentity)
	}
	hash := IdentityHash(key)
	if export.Status.IdentityHash != "" && export.Status.IdentityHash != hash {
		invalid(export, apisv1alpha1.IdentityVerificationFailedReason, fmt.Sprintf("The key in secret %s/%s does not match status.identityHash: the identity of an APIExport never changes", ref.Namespace, ref.Name))
		return loop.RequeueAfter(recheckInvalidIdentity)
	}
	export.Status.IdentityHash = hash
	conditionsv1alpha1.Set(export, conditionsv1alpha1.Condition{Type: apisv1alpha1.APIExportIdentityValid, Status: corev1.ConditionTrue})
	return nil
}

// createDefault creates the default identity secret with a random key; if
// it appeared meanwhile, the existing one wins.
func (r *identityReconciler) createDefault(ctx context.Context, cluster logicalcluster.Name, namespace, name string) (*corev1.Secret, error) {
	key, err := r.newKey()
	if err != nil {
		return nil, err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{apisv1alpha1.SecretKeyAPIExportIdentity: []byte(key)},
	}
	err = r.createSecret(ctx, cluster, secret)
	if apierrors.IsAlreadyExists(err) {
		existing, err := r.getSecret(ctx, cluster, namespace, name)
		if err == nil && existing == nil {
			err = fmt.Errorf("identity secret %s/%s exists and vanished", namespace, name)
		}
		return existing, err
	}
	if err != nil {
		return nil, err
	}
	return secret, nil
}

func invalid(export *apisv1alpha2.APIExport, reason, message string) {
	conditionsv1alpha1.Set(export, conditionsv1alpha1.Condition{
		Type: apisv1alpha1.APIExportIdentityValid, Status: corev1.ConditionFalse,
		Severity: conditionsv1alpha1.ConditionSeverityError, Reason: reason, Message: message,
	})
}
