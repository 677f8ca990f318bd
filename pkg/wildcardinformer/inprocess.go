package wildcardinformer

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/registry/rest"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/tools/cache"

	kstorage "github.com/shardplane/shardplane/pkg/storage"
)

// Storage is the REST storage of a resource, as an in-process informer
// reads it.
type Storage interface {
	rest.Lister
	rest.Watcher
}

// InProcess returns a list and watch of a resource's REST storage in this
// process, where a client would go through the API server's handler: no
// encoding, no decoding, no request. storage returns the storage, or nil
// until it is installed; caller turns a context into the request context of
// a list or watch (verb) of all logical clusters by a privileged user.
//
// The objects it lists share their maps and slices with the watch cache:
// a list's items are the list's own structs (typed lists hold values), but
// the labels, annotations, spec and status under them are the cached ones.
// Setting a field of such an object is safe; writing into its maps or
// slices, or into anything they point to, changes the watch cache. A watch
// event's object follows the same rule: a struct of the watch's own, a
// shallow copy of (or converted from) the watch cache's object, read
// without the deep copy the cacher's wrapper makes for each watcher
// (storage.SharedObject). Other storages' wrapped objects are copied
// (runtime.CacheableObject's GetObject), their labels, annotations and
// values shared as the cache's are (storage.ShareValues).
func InProcess(resource schema.GroupVersionResource, storage func() Storage, caller func(ctx context.Context, verb string) context.Context) cache.ListerWatcher {
	return &inProcess{resource: resource, storage: storage, caller: caller}
}

// InProcessInternal is InProcess for a storage that holds the internal
// type of kind (Kubernetes' own kinds: core, rbac, ...): field selectors are
// converted to the internal type's as the API server's handler converts
// them, and the listed items and watched objects from the internal type to
// kind's version by scheme (the shard's), as the handler does before
// encoding: without a copy first. Generated conversions cast what is laid
// out alike (unsafe.Pointer), so the converted objects share their maps and
// slices with the storage's objects: the same read-only rule as InProcess's.
func InProcessInternal(resource schema.GroupVersionResource, kind schema.GroupVersionKind, scheme *runtime.Scheme, storage func() Storage, caller func(ctx context.Context, verb string) context.Context) cache.ListerWatcher {
	return &inProcess{resource: resource, storage: storage, caller: caller, internal: &versioning{kind: kind, convertor: runtime.UnsafeObjectConvertor(scheme)}}
}

type inProcess struct {
	resource schema.GroupVersionResource
	storage  func() Storage
	caller   func(context.Context, string) context.Context
	// internal is set when the storage holds internal types.
	internal *versioning
	// selector, when set, is the field selector of every list and watch
	// (Selected).
	selector fields.Selector
}

// Selected returns lw limited to the objects that match selector, a field
// selector lw's resource offers. A list/watch of InProcess or
// InProcessInternal stays one: an informer on it must know that its
// objects' maps and slices are the watch cache's, and leave them alone.
// Another list/watch is wrapped.
func Selected(lw cache.ListerWatcher, selector fields.Selector) cache.ListerWatcher {
	if selector.Empty() {
		return lw
	}
	if l, ok := lw.(*inProcess); ok {
		selected := *l
		selected.selector = selector
		return &selected
	}
	withContext := cache.ToListerWatcherWithContext(lw)
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
			options.FieldSelector = selector.String()
			return withContext.ListWithContext(ctx, options)
		},
		WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			options.FieldSelector = selector.String()
			return withContext.WatchWithContext(ctx, options)
		},
	}
}

// versioning turns a storage's internal objects into kind's version.
type versioning struct {
	kind      schema.GroupVersionKind
	convertor runtime.ObjectConvertor
}

// versioned returns obj, an internal object or list, in kind's version.
func (v *versioning) versioned(obj runtime.Object) (runtime.Object, error) {
	if v == nil {
		return obj, nil
	}
	out, err := v.convertor.ConvertToVersion(obj, v.kind.GroupVersion())
	if err != nil {
		return nil, fmt.Errorf("convert %T to %s: %w", obj, v.kind.GroupVersion(), err)
	}
	// Without apiVersion and kind, as a typed client decodes them.
	out.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return out, nil
}

var _ cache.ListerWatcherWithContext = &inProcess{}

// List implements cache.Lister; the reflector calls ListWithContext.
func (l *inProcess) List(options metav1.ListOptions) (runtime.Object, error) {
	return l.ListWithContext(context.Background(), options)
}

// Watch implements cache.Watcher; the reflector calls WatchWithContext.
func (l *inProcess) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return l.WatchWithContext(context.Background(), options)
}

// ListWithContext lists the storage as the API server's list handler would.
func (l *inProcess) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	s, opts, err := l.prepare(options, false)
	if err != nil {
		return nil, err
	}
	list, err := s.List(l.caller(ctx, "list"), opts)
	if err != nil {
		return nil, asAPIError(err)
	}
	out, err := l.internal.versioned(list)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return out, nil
}

// WatchWithContext watches the storage until ctx is done, the watch is
// stopped or options' timeout has passed, as the API server's watch handler
// would. Errors the storage reports as events (a resource version too old:
// 410 Gone) reach the reflector as they would over HTTP.
func (l *inProcess) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	s, opts, err := l.prepare(options, true)
	if err != nil {
		return nil, err
	}
	var cancel context.CancelFunc
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds > 0 {
		ctx, cancel = context.WithTimeout(ctx, time.Duration(*opts.TimeoutSeconds)*time.Second)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	w, err := s.Watch(l.caller(ctx, "watch"), opts)
	if err != nil {
		cancel()
		return nil, asAPIError(err)
	}
	p := &plainWatch{inner: w, out: make(chan watch.Event), cancel: cancel, internal: l.internal}
	go p.run(ctx)
	return p, nil
}

// prepare finds the storage and turns options into what the storage takes,
// defaulted and validated as the API server's handler does.
func (l *inProcess) prepare(options metav1.ListOptions, watching bool) (Storage, *metainternalversion.ListOptions, error) {
	s := l.storage()
	if s == nil {
		return nil, nil, apierrors.NewServiceUnavailable(fmt.Sprintf("the storage of %s is not installed yet", l.resource.GroupResource()))
	}
	if l.selector != nil {
		options.FieldSelector = l.selector.String()
	}
	opts := &metainternalversion.ListOptions{}
	if err := metainternalversion.Convert_v1_ListOptions_To_internalversion_ListOptions(&options, opts, nil); err != nil {
		return nil, nil, apierrors.NewBadRequest(err.Error())
	}
	opts.Watch = opts.Watch || watching
	watchList := utilfeature.DefaultFeatureGate.Enabled(features.WatchList)
	metainternalversion.SetListOptionsDefaults(opts, watchList)
	if errs := metainternalversionvalidation.ValidateListOptions(opts, watchList); len(errs) > 0 {
		return nil, nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "", errs)
	}
	if l.internal != nil && opts.FieldSelector != nil {
		// As the handler does: a field the kind does not offer is refused.
		selector, err := opts.FieldSelector.Transform(func(label, value string) (string, string, error) {
			return l.internal.convertor.ConvertFieldLabel(l.internal.kind, label, value)
		})
		if err != nil {
			return nil, nil, apierrors.NewBadRequest(err.Error())
		}
		opts.FieldSelector = selector
	}
	return s, opts, nil
}

// asAPIError returns err as the API server's handler would send it: an
// error that is no API status becomes an internal error (500), which the
// reflector retries.
func asAPIError(err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	return apierrors.NewInternalError(err)
}

// plainWatch hands out the storage's watch events with the objects the
// cacher wraps for serialization (runtime.CacheableObject) unwrapped (and
// converted to their version when the storage's are internal), and ends
// when its context does.
type plainWatch struct {
	inner    watch.Interface
	out      chan watch.Event
	cancel   context.CancelFunc
	internal *versioning
}

func (p *plainWatch) ResultChan() <-chan watch.Event { return p.out }

// Stop ends the watch; ResultChan is closed soon after.
func (p *plainWatch) Stop() { p.cancel() }

func (p *plainWatch) run(ctx context.Context) {
	defer close(p.out)
	defer p.inner.Stop()
	defer p.cancel()
	in := p.inner.ResultChan()
	for {
		select {
		case e, ok := <-in:
			if !ok {
				return
			}
			// The watch cache's own object, uncopied, is converted into a
			// struct of this watch's own, or copied shallowly: its maps and
			// slices stay the cache's (read-only, as a list's items),
			// already sharing registered values.
			obj, shared := kstorage.SharedObject(e.Object)
			if shared && p.internal == nil {
				obj = shallowCopy(obj)
			}
			e.Object = obj
			if e.Type != watch.Error {
				obj, err := p.internal.versioned(e.Object)
				if err != nil {
					// The handler would end the watch with the error.
					e = watch.Event{Type: watch.Error, Object: &apierrors.NewInternalError(err).ErrStatus}
				} else {
					e.Object = obj
				}
			}
			if !shared {
				// This watch's own copy: its labels, annotations and
				// values are shared as the cached ones are.
				kstorage.ShareValues(e.Object)
			}
			select {
			case p.out <- e:
			case <-ctx.Done():
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// shallowCopy returns a new struct equal to obj's: setting its fields
// leaves obj alone, while the maps, slices and pointers under them stay
// obj's. An object that keeps its content in a map (unstructured) is
// copied deeply.
func shallowCopy(obj runtime.Object) runtime.Object {
	v := reflect.ValueOf(obj)
	if _, unstructured := obj.(runtime.Unstructured); unstructured || v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return obj.DeepCopyObject()
	}
	c := reflect.New(v.Elem().Type())
	c.Elem().Set(v.Elem())
	return c.Interface().(runtime.Object)
}
