package serviceaccount

import (
	"bytes"
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// tokenSecret fills one secret-based service account token, or deletes it
// when its service account is gone, as upstream's syncSecret does.
type tokenSecret struct {
	caBundle          []byte
	getServiceAccount func(ctx context.Context, cluster logicalcluster.Name, ns, name string) (*corev1.ServiceAccount, error)
	generate          func(ctx context.Context, cluster logicalcluster.Name, sa *corev1.ServiceAccount, secret *corev1.Secret) (string, error)
	update            func(ctx context.Context, cluster logicalcluster.Name, secret *corev1.Secret) error
	delete            func(ctx context.Context, cluster logicalcluster.Name, secret *corev1.Secret) error
}

func (r *tokenSecret) reconcile(ctx context.Context, cluster logicalcluster.Name, secret *corev1.Secret) error {
	logger := klog.FromContext(ctx).WithValues("namespace", secret.Namespace, "secret", secret.Name)
	saName, saUID := secret.Annotations[corev1.ServiceAccountNameKey], secret.Annotations[corev1.ServiceAccountUIDKey]
	sa, err := r.getServiceAccount(ctx, cluster, secret.Namespace, saName)
	switch {
	case apierrors.IsNotFound(err) || (err == nil && saUID != "" && string(sa.UID) != saUID) || (err == nil && sa.DeletionTimestamp != nil):
		logger.V(2).Info("Service account does not exist, deleting its token", "serviceAccount", saName)
		if err := r.delete(ctx, cluster, secret); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
		return nil
	case err != nil:
		return err
	}

	needsCA := len(r.caBundle) > 0 && !bytes.Equal(secret.Data[corev1.ServiceAccountRootCAKey], r.caBundle)
	needsNamespace := len(secret.Data[corev1.ServiceAccountNamespaceKey]) == 0
	needsToken := len(secret.Data[corev1.ServiceAccountTokenKey]) == 0
	needsUID := saUID == ""
	if !needsCA && !needsNamespace && !needsToken && !needsUID {
		return nil
	}
	secret = secret.DeepCopy()
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	if needsCA {
		secret.Data[corev1.ServiceAccountRootCAKey] = r.caBundle
	}
	if needsNamespace {
		secret.Data[corev1.ServiceAccountNamespaceKey] = []byte(secret.Namespace)
	}
	if needsToken {
		token, err := r.generate(ctx, cluster, sa, secret)
		if err != nil {
			return err
		}
		secret.Data[corev1.ServiceAccountTokenKey] = []byte(token)
	}
	secret.Annotations[corev1.ServiceAccountNameKey] = sa.Name
	secret.Annotations[corev1.ServiceAccountUIDKey] = string(sa.UID)
	logger.V(2).Info("Filling service account token secret", "serviceAccount", saName, "token", needsToken)
	err = r.update(ctx, cluster, secret)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // the watch brings the current secret back
	}
	return err
}
