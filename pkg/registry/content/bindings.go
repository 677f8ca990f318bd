package content

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
)

// A deleted APIBinding waits for its finalizer until the APIBinding
// controller has deleted the instances of its bound resources. A binding
// whose bound resources are all served by the shard itself (a workspace's
// default tenancy.kcp.io binding) has no instances of its own: the
// controller would let it go at once, after one more request and, here,
// one more pass over the whole cluster. The deleter lets such bindings go
// itself, just before it deletes them. Bindings of other resources stay
// with the controller, and a finalizer other than the binding's own still
// holds a binding as it holds any object.

var apiBindingsResource = apisv1alpha2.Resource("apibindings")

// releaseBindings removes the binding finalizer from those of bindings
// (what the scan found in ctx's cluster) that bind only resources the
// shard serves itself, and returns the finalizers left on each binding it
// wrote, by name.
func (d *Deleter) releaseBindings(ctx context.Context, bindings []*apisv1alpha2.APIBinding) (map[string][]string, error) {
	if d.bindings == nil {
		return nil, nil
	}
	var released map[string][]string
	for _, b := range bindings {
		if !d.releasable(b) {
			continue
		}
		// Update validation reads what is being updated from the request info.
		ctx := as(ctx, "update", apisv1alpha2.SchemeGroupVersion.WithResource(apiBindingsResource.Resource), b.Name)
		obj, _, err := d.bindings.Update(ctx, b.Name, rest.DefaultUpdatedObjectInfo(nil, d.released), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("release APIBinding %s: %w", b.Name, err)
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		if released == nil {
			released = map[string][]string{}
		}
		released[b.Name] = m.GetFinalizers()
	}
	return released, nil
}

// releasable tells whether b carries the binding finalizer and binds only
// resources the shard serves itself.
func (d *Deleter) releasable(b *apisv1alpha2.APIBinding) bool {
	if !slices.Contains(b.Finalizers, apisv1alpha2.APIBindingFinalizer) {
		return false
	}
	for _, r := range b.Status.BoundResources {
		if !d.native[schema.GroupResource{Group: r.Group, Resource: r.Resource}] {
			return false
		}
	}
	return true
}

// released is the stored binding without the binding finalizer, or
// unchanged (no write) if it has meanwhile bound a resource of its own.
func (d *Deleter) released(_ context.Context, _, stored runtime.Object) (runtime.Object, error) {
	b, ok := stored.(*apisv1alpha2.APIBinding)
	if !ok {
		return nil, fmt.Errorf("expected an APIBinding, got %T", stored)
	}
	b = b.DeepCopy()
	if !d.releasable(b) {
		return b, nil
	}
	b.Finalizers = slices.DeleteFunc(b.Finalizers, func(f string) bool { return f == apisv1alpha2.APIBindingFinalizer })
	return b, nil
}
