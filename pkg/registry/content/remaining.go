package content

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Remaining is what a deletion pass left in a logical cluster because
// finalizers hold it: the number of objects per resource and per finalizer.
type Remaining struct {
	// Resources counts the remaining objects by resource.
	Resources map[schema.GroupResource]int
	// Finalizers counts the remaining objects by finalizer.
	Finalizers map[string]int
}

// Empty tells whether nothing remains.
func (r Remaining) Empty() bool { return len(r.Resources) == 0 }

// add records one remaining object of a resource with its finalizers.
func (r *Remaining) add(resource schema.GroupResource, finalizers []string) {
	r.init()
	r.Resources[resource]++
	for _, f := range finalizers {
		r.Finalizers[f]++
	}
}

// merge adds the counts of o.
func (r *Remaining) merge(o Remaining) {
	r.init()
	for gr, n := range o.Resources {
		r.Resources[gr] += n
	}
	for f, n := range o.Finalizers {
		r.Finalizers[f] += n
	}
}

func (r *Remaining) init() {
	if r.Resources == nil {
		r.Resources = map[schema.GroupResource]int{}
		r.Finalizers = map[string]int{}
	}
}

// String says what remains in kcp's words, e.g. "Some resources are
// remaining: configmaps has 1 resource instances; Some content in the
// workspace has finalizers remaining: example.com/hold in 1 resource
// instances". It is sorted, so that it changes only when the content does.
func (r Remaining) String() string {
	if r.Empty() {
		return ""
	}
	var resources []string
	for _, gr := range slices.SortedFunc(maps.Keys(r.Resources), func(a, b schema.GroupResource) int {
		return strings.Compare(a.String(), b.String())
	}) {
		resources = append(resources, fmt.Sprintf("%s has %d resource instances", gr, r.Resources[gr]))
	}
	msg := "Some resources are remaining: " + strings.Join(resources, ", ")
	if len(r.Finalizers) == 0 {
		return msg
	}
	var finalizers []string
	for _, f := range slices.Sorted(maps.Keys(r.Finalizers)) {
		finalizers = append(finalizers, fmt.Sprintf("%s in %d resource instances", f, r.Finalizers[f]))
	}
	return msg + "; Some content in the workspace has finalizers remaining: " + strings.Join(finalizers, ", ")
}
