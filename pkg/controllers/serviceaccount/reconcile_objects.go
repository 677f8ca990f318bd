package serviceaccount

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

var (
	metav1CreateOptions = metav1.CreateOptions{}
	metav1UpdateOptions = metav1.UpdateOptions{}
)

// defaultServiceAccount creates the "default" service account of a
// namespace when neither the informer nor, when it can tell, the storage
// has it.
type defaultServiceAccount struct {
	get func(cluster logicalcluster.Name, ns string) bool
	// stored tells whether the storage holds the object (optional).
	stored func(ctx context.Context, cluster logicalcluster.Name, ns string) (bool, error)
	create func(ctx context.Context, cluster logicalcluster.Name, sa *corev1.ServiceAccount) error
}

func (r *defaultServiceAccount) reconcile(ctx context.Context, cluster logicalcluster.Name, ns *corev1.Namespace) error {
	if r.get(cluster, ns.Name) || storedYet(ctx, r.stored, cluster, ns.Name) {
		return nil
	}
	if err := r.create(ctx, cluster, DefaultServiceAccount(ns.Name)); err != nil && !apierrors.IsAlreadyExists(err) && !isNamespaceGoing(err) {
		return err
	}
	return nil
}

// DefaultServiceAccount is the service account every namespace gets.
func DefaultServiceAccount(namespace string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: DefaultServiceAccountName}}
}

// RootCAConfigMap is the config map every namespace gets, with the shard's
// CA bundle.
func RootCAConfigMap(namespace, caBundle string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   namespace,
			Name:        RootCAConfigMapName,
			Annotations: map[string]string{descriptionAnnotation: rootCADescription},
		},
		Data: map[string]string{RootCAKey: caBundle},
	}
}

// NamespaceObjects are the objects this controller keeps in every
// namespace, as it creates them. Whoever creates a namespace together with
// them (a new logical cluster's bootstrap) spares the controller the
// creates; the controller's informers then find them.
func NamespaceObjects(namespace string, caBundle []byte) []runtime.Object {
	return []runtime.Object{DefaultServiceAccount(namespace), RootCAConfigMap(namespace, string(caBundle))}
}

// rootCA keeps the "kube-root-ca.crt" config map of a namespace with the
// shard's CA bundle.
type rootCA struct {
	caBundle string
	get      func(cluster logicalcluster.Name, ns string) *corev1.ConfigMap
	// stored tells whether the storage holds the object (optional).
	stored func(ctx context.Context, cluster logicalcluster.Name, ns string) (bool, error)
	create func(ctx context.Context, cluster logicalcluster.Name, cm *corev1.ConfigMap) error
	update func(ctx context.Context, cluster logicalcluster.Name, cm *corev1.ConfigMap) error
}

// recheckStored is when a namespace whose config map is stored but not yet
// in the informer is looked at again, to check its content.
const recheckStored = loop.RequeueAfter(time.Second)

func (r *rootCA) reconcile(ctx context.Context, cluster logicalcluster.Name, ns *corev1.Namespace) error {
	existing := r.get(cluster, ns.Name)
	if existing == nil && storedYet(ctx, r.stored, cluster, ns.Name) {
		return recheckStored
	}
	if existing == nil {
		if err := r.create(ctx, cluster, RootCAConfigMap(ns.Name, r.caBundle)); err != nil && !apierrors.IsAlreadyExists(err) && !isNamespaceGoing(err) {
			return err
		}
		return nil
	}
	if len(existing.Data) == 1 && existing.Data[RootCAKey] == r.caBundle && len(existing.BinaryData) == 0 &&
		existing.Annotations[descriptionAnnotation] == rootCADescription {
		return nil
	}
	cm := existing.DeepCopy()
	cm.Data, cm.BinaryData = map[string]string{RootCAKey: r.caBundle}, nil
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[descriptionAnnotation] = rootCADescription
	if err := r.update(ctx, cluster, cm); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	return nil
}

// storedYet tells whether stored knows of an object that the informer does
// not show yet. A new cluster's bootstrap creates each namespace's objects
// in-process just before the namespace, and their informers, on other
// watch streams, often lag the namespace's: without this look a create of
// each, refused as a conflict, would go through the whole request path.
// An error reads as not stored: the create then decides.
func storedYet(ctx context.Context, stored func(context.Context, logicalcluster.Name, string) (bool, error), cluster logicalcluster.Name, ns string) bool {
	if stored == nil {
		return false
	}
	ok, err := stored(ctx, cluster, ns)
	return err == nil && ok
}

// isNamespaceGoing tells whether a create failed because the namespace is
// being deleted; the namespace's deletion event ends the matter.
func isNamespaceGoing(err error) bool {
	return apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}
