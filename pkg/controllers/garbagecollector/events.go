package garbagecollector

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

const (
	// eventComponent is the source of the collector's events, as upstream.
	eventComponent = "garbage-collector-controller"
	// reasonOwnerRefInvalidNamespace is upstream's reason for a reference to
	// an owner of another namespace.
	reasonOwnerRefInvalidNamespace = "OwnerRefInvalidNamespace"
)

// recordInvalidNamespaceOwnerRef records upstream's OwnerRefInvalidNamespace
// warning on dependent n, in n's cluster: ref names the UID of an owner that
// lives in another namespace than n.
func (c *Controller) recordInvalidNamespaceOwnerRef(ctx context.Context, n *node, ref metav1.OwnerReference) {
	logger := klog.FromContext(ctx).WithValues("cluster", n.key.cluster, "resource", n.resource, "namespace", n.namespace, "name", n.name)
	logger.V(2).Info("Object references an owner in another namespace", "owner", ref)
	if c.clusterEvents == nil {
		return
	}
	events, err := c.clusterEvents(n.key.cluster)
	if err != nil {
		logger.Error(err, "Recording event failed")
		return
	}
	apiVersion, kind := c.kindOf(n.key.cluster, n.resource)
	ns := n.namespace
	if ns == "" {
		ns = metav1.NamespaceDefault // where events of cluster-scoped objects go
	}
	now := metav1.NewTime(time.Now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%v.%x", n.name, now.UnixNano())},
		InvolvedObject: corev1.ObjectReference{
			Kind: kind, APIVersion: apiVersion, Namespace: n.namespace, Name: n.name, UID: n.key.uid,
		},
		Reason: reasonOwnerRefInvalidNamespace,
		// The owner's coordinates as the reference states them, in the
		// dependent's namespace: the message upstream writes.
		Message: fmt.Sprintf("ownerRef [%s/%s, namespace: %s, name: %s, uid: %s] does not exist in namespace %q",
			ref.APIVersion, ref.Kind, n.namespace, ref.Name, ref.UID, n.namespace),
		Type:           corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: eventComponent},
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
	}
	if _, err := events.Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		logger.Error(err, "Recording event failed", "reason", reasonOwnerRefInvalidNamespace)
	}
}

// kindOf returns the apiVersion and kind of a resource in one cluster, or
// empty strings when it is not known.
func (c *Controller) kindOf(cluster logicalcluster.Name, gvr schema.GroupVersionResource) (string, string) {
	objs, _ := c.crds.List(cluster, "")
	for _, obj := range objs {
		if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok && crd.Spec.Group == gvr.Group && crd.Spec.Names.Plural == gvr.Resource {
			return gvr.GroupVersion().String(), crd.Spec.Names.Kind
		}
	}
	if c.builtinMapper != nil {
		if gvk, err := c.builtinMapper.KindFor(gvr); err == nil {
			return gvk.GroupVersion().String(), gvk.Kind
		}
	}
	return gvr.GroupVersion().String(), ""
}
