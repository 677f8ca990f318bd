// Package status serves the status subresource of a resource stored by a
// generic registry store, the same way for every kcp resource.
package status

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Strategy is what the status subresource needs from a resource: how a
// status update is prepared and validated, and which fields it resets.
type Strategy interface {
	rest.RESTUpdateStrategy
	rest.ResetFieldsStrategy
}

// REST serves GET, PUT and PATCH of <resource>/status.
type REST struct {
	store *genericregistry.Store
}

var (
	_ rest.Getter              = &REST{}
	_ rest.Updater             = &REST{}
	_ rest.Patcher             = &REST{}
	_ rest.TableConvertor      = &REST{}
	_ rest.ResetFieldsStrategy = &REST{}
)

// NewREST returns the status subresource of a completed main store. It
// shares the main store's storage but updates with the status strategy and
// cannot create or delete.
func NewREST(main *genericregistry.Store, strategy Strategy) *REST {
	store := *main
	store.CreateStrategy = nil
	store.UpdateStrategy = strategy
	store.DeleteStrategy = nil
	store.ResetFieldsStrategy = strategy
	return &REST{store: &store}
}

// New returns an empty object of the resource.
func (r *REST) New() runtime.Object {
	return r.store.New()
}

// Destroy does nothing: the storage belongs to the main store, which
// destroys it.
func (r *REST) Destroy() {}

// Get retrieves the object; PATCH needs it.
func (r *REST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update changes the status of an object. A status update never creates the
// object.
func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// GetResetFields returns the fields a status update leaves alone, for
// server-side apply.
func (r *REST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

// ConvertToTable prints the object as the main resource does.
func (r *REST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}
