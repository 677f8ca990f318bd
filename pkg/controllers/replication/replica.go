package replication

import (
	"fmt"
	"math"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// newReplica returns what the cache server should hold of a local object:
// a copy in the kind's version, without resourceVersion and managedFields,
// annotated with the shard and the logical cluster it comes from.
func newReplica(obj interface{}, kind cacheclient.Kind, shard string, cluster logicalcluster.Name) (*unstructured.Unstructured, error) {
	var u *unstructured.Unstructured
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		u = o.DeepCopy()
	case runtime.Object:
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, fmt.Errorf("convert %T: %w", obj, err)
		}
		u = &unstructured.Unstructured{Object: content}
	default:
		return nil, fmt.Errorf("unexpected object %T", obj)
	}
	// Typed objects from an informer carry no apiVersion and kind.
	u.SetGroupVersionKind(kind.GroupVersionKind())
	u.SetResourceVersion("")
	u.SetManagedFields(nil)
	a := u.GetAnnotations()
	if a == nil {
		a = make(map[string]string, 2)
	}
	a[cacheclient.ShardAnnotationKey] = shard
	a[logicalcluster.AnnotationKey] = string(cluster)
	u.SetAnnotations(a)
	return u, nil
}

// replicaUpToDate tells whether the replica have needs no update to hold
// what want (from newReplica) holds: the same labels, annotations (the
// origin annotations the cache server sets aside) and top-level fields
// other than metadata (spec, status, rules, roleRef, subjects, ...).
// resourceVersion, managedFields, generation and the rest of the metadata
// do not count.
func replicaUpToDate(want, have *unstructured.Unstructured) bool {
	if !equalStrings(want.GetLabels(), have.GetLabels(), nil) {
		return false
	}
	origin := map[string]bool{cacheclient.ShardAnnotationKey: true, logicalcluster.AnnotationKey: true}
	if !equalStrings(want.GetAnnotations(), have.GetAnnotations(), origin) {
		return false
	}
	for k, v := range want.Object {
		if k != "metadata" && !equalJSON(v, have.Object[k]) {
			return false
		}
	}
	for k, v := range have.Object {
		if _, ok := want.Object[k]; !ok && k != "metadata" && !equalJSON(nil, v) {
			return false
		}
	}
	return true
}

// equalStrings compares two string maps, skipping the keys in ignore; nil
// and empty are equal.
func equalStrings(a, b map[string]string, ignore map[string]bool) bool {
	count := func(m map[string]string) int {
		n := 0
		for k := range m {
			if !ignore[k] {
				n++
			}
		}
		return n
	}
	if count(a) != count(b) {
		return false
	}
	for k, v := range a {
		if ignore[k] {
			continue
		}
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// equalJSON compares two values of unstructured content as JSON would: a
// field set to null equals a missing one, and numbers are equal by value
// whether they decoded as integers or floats.
func equalJSON(a, b interface{}) bool {
	switch x := a.(type) {
	case nil:
		switch y := b.(type) {
		case nil:
			return true
		case map[string]interface{}:
			return y == nil
		case []interface{}:
			return y == nil
		}
		return false
	case map[string]interface{}:
		y, ok := b.(map[string]interface{})
		if !ok {
			return b == nil && x == nil
		}
		for k, v := range x {
			if !equalJSON(v, y[k]) {
				return false
			}
		}
		for k, v := range y {
			if _, ok := x[k]; !ok && v != nil {
				return false
			}
		}
		return true
	case []interface{}:
		y, ok := b.([]interface{})
		if !ok {
			return b == nil && x == nil
		}
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	return reflect.DeepEqual(a, b)
}

// number returns a numeric value of unstructured content as a float64.
func number(v interface{}) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, !math.IsNaN(n)
	case float32:
		return float64(n), true
	}
	return 0, false
}
