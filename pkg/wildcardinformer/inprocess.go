package wildcardinformer

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/registry/rest"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/tools/cache"

	kstorage "github.com/kplane-dev/kplane/pkg/storage"
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
// event's object is a copy for this watch (the cacher's, or
// runtime.CacheableObject's GetObject), with its labels, annotations and
// values shared as the cache's are (storage.ShareValues).
func InProcess(resource schema.GroupVersionResource, storage func() Storage, caller func(ctx context.Context, verb string) context.Context) cache.ListerWatcher {
	return &inProcess{resource: resource, storage: storage, caller: caller}
}

type inProcess struct {
	resource schema.GroupVersionResource
	storage  func() Storage
	caller   func(context.Context, string) context.Context
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
	return list, nil
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
	p := &plainWatch{inner: w, out: make(chan watch.Event), cancel: cancel}
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
// cacher wraps for serialization (runtime.CacheableObject) unwrapped, and
// ends when its context does.
type plainWatch struct {
	inner  watch.Interface
	out    chan watch.Event
	cancel context.CancelFunc
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
			if c, ok := e.Object.(runtime.CacheableObject); ok {
				e.Object = c.GetObject()
			}
			// The object is this watch's own copy: its labels,
			// annotations and values are shared as the cached ones are.
			kstorage.ShareValues(e.Object)
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
