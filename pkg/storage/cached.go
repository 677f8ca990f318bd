package storage

import (
	"reflect"
	"sync"
	"unsafe"

	"k8s.io/apimachinery/pkg/runtime"
)

// SharedObject returns the object a watch event of a watch cache carries,
// without the deep copy runtime.CacheableObject's GetObject makes for each
// watcher: it is the watch cache's own, so it and everything under it must
// only be read. shared is false when obj is not the cacher's wrapper; out
// is then what GetObject returns, or obj when it is no wrapper at all.
func SharedObject(obj runtime.Object) (out runtime.Object, shared bool) {
	c, ok := obj.(runtime.CacheableObject)
	if !ok {
		return obj, false
	}
	v := reflect.ValueOf(c)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return c.GetObject(), false
	}
	s := v.Elem()
	f, ok := cachingObjectFields(s.Type())
	if !ok {
		return c.GetObject(), false
	}
	lock := (*sync.RWMutex)(unsafe.Pointer(s.Field(f.lock).UnsafeAddr()))
	field := s.Field(f.object)
	lock.RLock()
	wrapped := reflect.NewAt(field.Type(), unsafe.Pointer(field.UnsafeAddr())).Elem().Interface()
	lock.RUnlock()
	if out, ok := wrapped.(runtime.Object); ok && out != nil {
		return out, true
	}
	return c.GetObject(), false
}

// wrapperFields are the indices of the cacher's wrapper's lock and object.
type wrapperFields struct{ lock, object int }

// wrapperTypes caches cachingObjectFields' answer per type (a *wrapperFields,
// nil when the type is not the wrapper).
var wrapperTypes sync.Map

// cachingObjectFields finds the fields SharedObject reads in the wrapper
// upstream's cacher puts around the object of each watch event it
// dispatches (cacher's cachingObject, unexported): a sync.RWMutex lock,
// which guards the object when a watcher sets a field of it (the wrapper
// then copies first), and the object, an interface. False for any other
// type, and for a cacher whose wrapper does not look like this.
func cachingObjectFields(t reflect.Type) (wrapperFields, bool) {
	if f, ok := wrapperTypes.Load(t); ok {
		if f == (*wrapperFields)(nil) {
			return wrapperFields{}, false
		}
		return *f.(*wrapperFields), true
	}
	var found *wrapperFields
	if t.PkgPath() == "k8s.io/apiserver/pkg/storage/cacher" && t.Name() == "cachingObject" {
		lock, okLock := t.FieldByName("lock")
		object, okObject := t.FieldByName("object")
		if okLock && okObject && len(lock.Index) == 1 && len(object.Index) == 1 &&
			lock.Type == reflect.TypeOf(sync.RWMutex{}) && object.Type.Kind() == reflect.Interface {
			found = &wrapperFields{lock: lock.Index[0], object: object.Index[0]}
		}
	}
	wrapperTypes.Store(t, found)
	if found == nil {
		return wrapperFields{}, false
	}
	return *found, true
}
