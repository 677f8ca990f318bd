package storage

import (
	"reflect"
	"sync"
	"unsafe"

	"k8s.io/apimachinery/pkg/types"
)

// sharedStrings shares equal strings between the objects the watch caches
// and informers keep. A decoder allocates every string of every object it
// decodes, while most of them are the same in every logical cluster: the
// names and namespaces of the objects each cluster is created with, the
// types, statuses and reasons of conditions, finalizers, the keys and most
// values of annotations, group and resource names, identity hashes. The
// watch cache keeps every recent version of an object, each decoded anew.
//
// Past its limit it starts over, and it is forgotten with the other
// interners after a mass deletion (forgetSharedMaps): a string no object
// holds any more is freed then.
var sharedStrings = &stringInterner{newSharedSet[string](1<<16, true)}

type stringInterner struct{ sharedSet[string] }

// maxSharedString is the longest string shared: longer ones (a
// last-applied configuration, a certificate) are seldom equal to another's,
// and registered values (ShareValue) cover those that are.
const maxSharedString = 256

// intern returns a string equal to s that may be shared, or s.
func (in *stringInterner) intern(s string) string {
	if s == "" || len(s) > maxSharedString {
		return s
	}
	return in.share(s, s)
}

// shareStrings makes the strings in obj, a pointer to a typed object the
// caller decoded for itself, the interner's, in place. Maps of strings are
// made anew when one of their keys is shared. It leaves alone what is
// unique to one object (UIDs, resource versions) and what it cannot set
// (interfaces: unstructured content).
func shareStrings(obj interface{}) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || !holdsStrings(v.Type()) {
		return
	}
	shareValueStrings(v.Elem())
}

var (
	uidType       = reflect.TypeFor[types.UID]()
	stringMapType = reflect.TypeFor[map[string]string]()
)

func shareValueStrings(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.Type() == uidType || !v.CanSet() {
			return
		}
		if s := v.String(); s != "" {
			if shared := sharedStrings.intern(s); unsafe.StringData(shared) != unsafe.StringData(s) {
				v.SetString(shared)
			}
		}
	case reflect.Pointer:
		if !v.IsNil() && holdsStrings(v.Type()) {
			shareValueStrings(v.Elem())
		}
	case reflect.Struct:
		if !holdsStrings(v.Type()) {
			return
		}
		t := v.Type()
		for i := 0; i < v.NumField(); i++ {
			if f := t.Field(i); f.IsExported() && f.Name != "ResourceVersion" {
				shareValueStrings(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 || !holdsStrings(v.Type().Elem()) {
			return
		}
		for i := 0; i < v.Len(); i++ {
			shareValueStrings(v.Index(i))
		}
	case reflect.Map:
		if v.Type().ConvertibleTo(stringMapType) && v.CanSet() && v.Len() > 0 {
			shareMapStrings(v)
		}
	}
}

// shareMapStrings shares the values of a map of strings in place and, when
// one of its keys can be shared, makes the map anew with shared keys.
func shareMapStrings(v reflect.Value) {
	m := v.Convert(stringMapType).Interface().(map[string]string)
	keysShared := false
	for k, s := range m {
		if shared := sharedStrings.intern(s); unsafe.StringData(shared) != unsafe.StringData(s) {
			m[k] = shared
		}
		if shared := sharedStrings.intern(k); unsafe.StringData(shared) != unsafe.StringData(k) {
			keysShared = true
		}
	}
	if !keysShared {
		return
	}
	fresh := make(map[string]string, len(m))
	for k, s := range m {
		fresh[sharedStrings.intern(k)] = s
	}
	v.Set(reflect.ValueOf(fresh).Convert(v.Type()))
}

// stringHolders caches holdsStrings per type.
var stringHolders sync.Map // reflect.Type -> bool

// holdsStrings tells whether a value of t can contain a string that
// shareValueStrings would share.
func holdsStrings(t reflect.Type) bool {
	if held, ok := stringHolders.Load(t); ok {
		return held.(bool)
	}
	// A recursive type is taken to hold strings while it is looked at.
	stringHolders.Store(t, true)
	held := false
	switch t.Kind() {
	case reflect.String:
		held = t != uidType
	case reflect.Pointer, reflect.Slice, reflect.Array:
		held = t.Elem().Kind() != reflect.Uint8 && holdsStrings(t.Elem())
	case reflect.Map:
		held = t.ConvertibleTo(stringMapType)
	case reflect.Struct:
		for i := 0; i < t.NumField() && !held; i++ {
			if f := t.Field(i); f.IsExported() {
				held = holdsStrings(f.Type)
			}
		}
	}
	stringHolders.Store(t, held)
	return held
}
