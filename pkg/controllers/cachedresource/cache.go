package cachedresource

import (
	"context"
	"encoding/json"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// cacheWriter writes and reads the shard's CachedObjects in the cache
// server.
type cacheWriter struct {
	shard   cacheclient.Shard
	objects *cacheclient.CachedObjectClient
}

func newCacheWriter(config *rest.Config, shard string) (*cacheWriter, error) {
	objects, err := cacheclient.NewCachedObjectClient(config)
	if err != nil {
		return nil, err
	}
	return &cacheWriter{shard: cacheclient.Shard(shard), objects: objects}, nil
}

// copies addresses the CachedObjects of one logical cluster of the shard.
func (w *cacheWriter) copies(cluster logicalcluster.Name) (dynamic.ResourceInterface, error) {
	return w.objects.In(w.shard, cluster)
}

// list returns the copies published by the ClusterCachedResource name.
func (w *cacheWriter) list(ctx context.Context, cluster logicalcluster.Name, name string) ([]unstructured.Unstructured, error) {
	return w.objects.List(ctx, w.shard, cluster, name)
}

// put writes the copy of obj, published by the ClusterCachedResource name
// under identity hash, unless it is there as it is.
func (w *cacheWriter) put(ctx context.Context, cluster logicalcluster.Name, name, hash string, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) error {
	copies, err := w.copies(cluster)
	if err != nil {
		return err
	}
	source := obj.DeepCopy()
	source.SetManagedFields(nil)
	raw, err := source.MarshalJSON()
	if err != nil {
		return err
	}
	var rawObject map[string]interface{}
	if err := json.Unmarshal(raw, &rawObject); err != nil {
		return err
	}
	copyName := cacheclient.CachedObjectName(name, obj.GetName())
	want := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": cacheclient.CachedObjects.Resource.GroupVersion().String(),
		"kind":       cacheclient.CachedObjects.Kind,
		"metadata": map[string]interface{}{
			"name":   copyName,
			"labels": map[string]interface{}{cacheclient.CachedResourceLabel: name},
			"annotations": map[string]interface{}{
				cacheclient.IdentityHashAnnotation: hash,
				cacheclient.ResourceAnnotation:     gvr.Resource + "." + gvr.Version + "." + gvr.Group,
			},
		},
		"spec": map[string]interface{}{"raw": rawObject},
	}}
	existing, err := copies.Get(ctx, copyName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = copies.Create(ctx, want, metav1.CreateOptions{})
		return err
	case err != nil:
		return err
	}
	if sameCopy(existing, want) {
		return nil
	}
	want.SetResourceVersion(existing.GetResourceVersion())
	_, err = copies.Update(ctx, want, metav1.UpdateOptions{})
	return err
}

// sameCopy tells whether the stored copy holds what want holds.
func sameCopy(existing, want *unstructured.Unstructured) bool {
	if existing.GetAnnotations()[cacheclient.IdentityHashAnnotation] != want.GetAnnotations()[cacheclient.IdentityHashAnnotation] ||
		existing.GetAnnotations()[cacheclient.ResourceAnnotation] != want.GetAnnotations()[cacheclient.ResourceAnnotation] {
		return false
	}
	a, _, _ := unstructured.NestedFieldNoCopy(existing.Object, "spec", "raw")
	b, _, _ := unstructured.NestedFieldNoCopy(want.Object, "spec", "raw")
	aj, _ := json.Marshal(a)
	bj, _ := json.Marshal(b)
	return string(aj) == string(bj)
}

// delete deletes the copy of the object objectName; a missing copy is no
// error.
func (w *cacheWriter) delete(ctx context.Context, cluster logicalcluster.Name, name, objectName string) error {
	copies, err := w.copies(cluster)
	if err != nil {
		return err
	}
	err = copies.Delete(ctx, cacheclient.CachedObjectName(name, objectName), metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// deleteAll deletes every copy the ClusterCachedResource name published.
func (w *cacheWriter) deleteAll(ctx context.Context, cluster logicalcluster.Name, name string) error {
	items, err := w.list(ctx, cluster, name)
	if err != nil {
		return err
	}
	copies, err := w.copies(cluster)
	if err != nil {
		return err
	}
	for _, item := range items {
		if err := copies.Delete(ctx, item.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// sourceName is the name of the object a copy holds.
func sourceName(copy *unstructured.Unstructured) string {
	name, _, _ := unstructured.NestedString(copy.Object, "spec", "raw", "metadata", "name")
	return name
}
