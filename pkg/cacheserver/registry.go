package cacheserver

import (
	"context"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/crdserverscheme"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	genericvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	storeerr "k8s.io/apiserver/pkg/storage/errors"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/apiserver/pkg/util/dryrun"

	"github.com/shardplane/shardplane/pkg/cacheclient"
)

// replicaStrategy stores replicas as their writers send them: object
// metadata must be valid, everything else is the writer's business.
type replicaStrategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	namespaced bool
}

func newReplicaStrategy(k cacheclient.Kind) replicaStrategy {
	return replicaStrategy{ObjectTyper: crdserverscheme.NewUnstructuredObjectTyper(), NameGenerator: names.SimpleNameGenerator, namespaced: k.Namespaced}
}

func (s replicaStrategy) NamespaceScoped() bool { return s.namespaced }

// writtenMetaKey carries the metadata a writer sent that the generic
// registry replaces before the strategy runs.
type writtenMetaKey struct{}

// writtenMeta is the uid, creation time and generation of the object a
// writer sent. A replica keeps those of its original: consumers compare
// them (an APIBinding records the UID of the schema it bound).
type writtenMeta struct {
	uid        types.UID
	created    metav1.Time
	generation int64
}

// withWrittenMeta returns a copy of ctx that carries what a writer sent.
func withWrittenMeta(ctx context.Context, w *writtenMeta) context.Context {
	return context.WithValue(ctx, writtenMetaKey{}, w)
}

func writtenMetaFrom(ctx context.Context) *writtenMeta {
	w, _ := ctx.Value(writtenMetaKey{}).(*writtenMeta)
	if w == nil {
		return &writtenMeta{}
	}
	return w
}

// record takes what obj carries: the generation, and uid and creation time
// where the request did not tell them (the HTTP handler erases them from
// the object).
func (w *writtenMeta) record(obj runtime.Object) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	w.generation = m.GetGeneration()
	if w.uid == "" {
		w.uid = m.GetUID()
	}
	if w.created.IsZero() {
		w.created = m.GetCreationTimestamp()
	}
}

func (s replicaStrategy) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	w := writtenMetaFrom(ctx)
	if w.uid != "" {
		m.SetUID(w.uid)
	}
	if !w.created.IsZero() {
		m.SetCreationTimestamp(w.created)
	}
	if m.GetGeneration() == 0 {
		m.SetGeneration(1)
	}
}

func (s replicaStrategy) PrepareForUpdate(ctx context.Context, obj, _ runtime.Object) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	// The registry reset the generation to the stored one; a writer that
	// sends one keeps its original's.
	if w := writtenMetaFrom(ctx); w.generation > 0 {
		m.SetGeneration(w.generation)
	}
}

func (s replicaStrategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	m, err := meta.Accessor(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("metadata"), err)}
	}
	return genericvalidation.ValidateObjectMetaAccessor(m, s.namespaced, path.ValidatePathSegmentName, field.NewPath("metadata"))
}

func (s replicaStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	m, err := meta.Accessor(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("metadata"), err)}
	}
	o, err := meta.Accessor(old)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("metadata"), err)}
	}
	errs := genericvalidation.ValidateObjectMetaAccessor(m, s.namespaced, path.ValidatePathSegmentName, field.NewPath("metadata"))
	return append(errs, genericvalidation.ValidateObjectMetaAccessorUpdate(m, o, field.NewPath("metadata"))...)
}

func (replicaStrategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

func (replicaStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

func (replicaStrategy) Canonicalize(runtime.Object) {}

// AllowCreateOnUpdate is false: a replica is created, then updated.
func (replicaStrategy) AllowCreateOnUpdate(context.Context) bool { return false }

// AllowUnconditionalUpdate lets a writer replace its replica without
// reading it first: it owns it.
func (replicaStrategy) AllowUnconditionalUpdate(context.Context) bool { return true }

// getAttrs returns labels and the metadata fields of a replica for
// selectors.
func (s replicaStrategy) getAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil, err
	}
	f := fields.Set{"metadata.name": m.GetName()}
	if s.namespaced {
		f["metadata.namespace"] = m.GetNamespace()
	}
	return labels.Set(m.GetLabels()), f, nil
}

// replicaREST is the storage of one replicated kind.
type replicaREST struct {
	*genericregistry.Store
}

var (
	_ rest.Creater           = &replicaREST{}
	_ rest.Updater           = &replicaREST{}
	_ rest.GracefulDeleter   = &replicaREST{}
	_ rest.CollectionDeleter = &replicaREST{}
)

func newReplicaREST(k cacheclient.Kind, optsGetter generic.RESTOptionsGetter, table rest.TableConvertor) (*replicaREST, error) {
	strategy := newReplicaStrategy(k)
	gvk, listGVK := k.GroupVersionKind(), k.ListGroupVersionKind()
	store := &genericregistry.Store{
		NewFunc: func() runtime.Object {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			return u
		},
		NewListFunc: func() runtime.Object {
			u := &unstructured.UnstructuredList{}
			u.SetGroupVersionKind(listGVK)
			return u
		},
		PredicateFunc: func(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
			return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: strategy.getAttrs}
		},
		DefaultQualifiedResource:  k.Resource.GroupResource(),
		SingularQualifiedResource: k.Resource.GroupVersion().WithResource(k.Singular).GroupResource(),
		CreateStrategy:            strategy,
		UpdateStrategy:            strategy,
		DeleteStrategy:            strategy,
		TableConvertor:            table,
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: strategy.getAttrs}); err != nil {
		return nil, fmt.Errorf("storage of %s: %w", k.Resource.GroupResource(), err)
	}
	return &replicaREST{Store: store}, nil
}

// Create keeps the uid, creation time and generation the writer sent.
func (r *replicaREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	w := *writtenMetaFrom(ctx)
	w.record(obj)
	return r.Store.Create(withWrittenMeta(ctx, &w), obj, createValidation, options)
}

// Update keeps the generation the writer sent.
func (r *replicaREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	w := &writtenMeta{}
	return r.Store.Update(withWrittenMeta(ctx, w), name, recordingObjectInfo{UpdatedObjectInfo: objInfo, written: w}, createValidation, updateValidation, forceAllowCreate, options)
}

// recordingObjectInfo records the metadata of the object a writer sent
// before the registry replaces part of it.
type recordingObjectInfo struct {
	rest.UpdatedObjectInfo
	written *writtenMeta
}

func (i recordingObjectInfo) UpdatedObject(ctx context.Context, oldObj runtime.Object) (runtime.Object, error) {
	obj, err := i.UpdatedObjectInfo.UpdatedObject(ctx, oldObj)
	if err == nil {
		i.written.record(obj)
	}
	return obj, err
}

// Delete removes a replica at once. A replica's finalizers are its
// original's data: nothing on the cache server acts on them, so they do not
// hold a deletion (the generic registry would wait for them).
func (r *replicaREST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	key, err := r.KeyFunc(ctx, name)
	if err != nil {
		return nil, false, err
	}
	if options == nil {
		options = &metav1.DeleteOptions{}
	}
	var preconditions storage.Preconditions
	if p := options.Preconditions; p != nil {
		preconditions.UID, preconditions.ResourceVersion = p.UID, p.ResourceVersion
	}
	out := r.NewFunc()
	if err := r.Storage.Delete(ctx, key, out, &preconditions, storage.ValidateObjectFunc(deleteValidation), dryrun.IsDryRun(options.DryRun), nil, storage.DeleteOptions{}); err != nil {
		return nil, false, storeerr.InterpretDeleteError(err, r.DefaultQualifiedResource, name)
	}
	m, err := meta.Accessor(out)
	if err != nil {
		return nil, false, err
	}
	return &metav1.Status{Status: metav1.StatusSuccess, Details: &metav1.StatusDetails{
		Name: m.GetName(), Group: r.DefaultQualifiedResource.Group, Kind: r.DefaultQualifiedResource.Resource, UID: m.GetUID(),
	}}, true, nil
}

// DeleteCollection deletes each selected replica as Delete does.
func (r *replicaREST) DeleteCollection(ctx context.Context, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions, listOptions *metainternalversion.ListOptions) (runtime.Object, error) {
	listObj, err := r.Store.List(ctx, listOptions)
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(listObj)
	if err != nil {
		return nil, err
	}
	deleted := make([]runtime.Object, 0, len(items))
	for _, item := range items {
		m, err := meta.Accessor(item)
		if err != nil {
			return nil, err
		}
		if _, _, err := r.Delete(ctx, m.GetName(), deleteValidation, options.DeepCopy()); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		deleted = append(deleted, item)
	}
	if err := meta.SetList(listObj, deleted); err != nil {
		return nil, err
	}
	return listObj, nil
}
