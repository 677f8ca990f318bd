// Package workspacetypes finds WorkspaceTypes by reference and answers the
// questions workspace creation asks of them: which type a child gets by
// default, whether a parent/child pair is allowed, which initializers a type
// brings.
package workspacetypes

import (
	"fmt"
	"strings"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// Resolver looks types up in the logical clusters of this shard.
type Resolver struct {
	// ResolvePath maps a workspace path to a logical cluster.
	ResolvePath func(logicalcluster.Path) (logicalcluster.Name, bool)
	// Get returns the WorkspaceType of a cluster, or nil.
	Get func(cluster logicalcluster.Name, name string) *tenancyv1alpha1.WorkspaceType
}

// ParseTypeAnnotation splits "<path>:<name>" (internal.tenancy.kcp.io/type).
func ParseTypeAnnotation(s string) (tenancyv1alpha1.WorkspaceTypeReference, bool) {
	i := strings.LastIndex(s, ":")
	if i <= 0 || i == len(s)-1 {
		return tenancyv1alpha1.WorkspaceTypeReference{}, false
	}
	return tenancyv1alpha1.WorkspaceTypeReference{Path: s[:i], Name: tenancyv1alpha1.WorkspaceTypeName(s[i+1:])}, true
}

// TypeAnnotation is the internal.tenancy.kcp.io/type value of a reference.
func TypeAnnotation(ref tenancyv1alpha1.WorkspaceTypeReference) string {
	return ref.Path + ":" + string(ref.Name)
}

func (r Resolver) lookup(path logicalcluster.Path, name tenancyv1alpha1.WorkspaceTypeName) *tenancyv1alpha1.WorkspaceType {
	cluster, ok := r.ResolvePath(path)
	if !ok {
		if n, isName := path.Name(); isName {
			cluster = n
		} else {
			return nil
		}
	}
	return r.Get(cluster, tenancyv1alpha1.ObjectName(name))
}

// Resolve finds the type of ref. A reference without a path is looked up in
// from and then in each of its ancestors. The returned reference has its
// path filled in.
func (r Resolver) Resolve(ref tenancyv1alpha1.WorkspaceTypeReference, from logicalcluster.Path) (*tenancyv1alpha1.WorkspaceType, tenancyv1alpha1.WorkspaceTypeReference, error) {
	if ref.Path != "" {
		if wt := r.lookup(logicalcluster.Path(ref.Path), ref.Name); wt != nil {
			return wt, ref, nil
		}
		return nil, ref, fmt.Errorf("workspace type %s does not exist", ref.String())
	}
	for p, ok := from, true; ok; p, ok = p.Parent() {
		if wt := r.lookup(p, ref.Name); wt != nil {
			return wt, tenancyv1alpha1.WorkspaceTypeReference{Name: ref.Name, Path: string(p)}, nil
		}
	}
	return nil, ref, fmt.Errorf("workspace type %q does not exist in %s or its parents", ref.Name, from)
}

// ExtendedTypes returns ref's type and every type it extends, transitively,
// each with its reference.
func (r Resolver) ExtendedTypes(wt *tenancyv1alpha1.WorkspaceType, ref tenancyv1alpha1.WorkspaceTypeReference) ([]*tenancyv1alpha1.WorkspaceType, []tenancyv1alpha1.WorkspaceTypeReference, error) {
	var types []*tenancyv1alpha1.WorkspaceType
	var refs []tenancyv1alpha1.WorkspaceTypeReference
	seen := map[string]bool{}
	var walk func(wt *tenancyv1alpha1.WorkspaceType, ref tenancyv1alpha1.WorkspaceTypeReference) error
	walk = func(wt *tenancyv1alpha1.WorkspaceType, ref tenancyv1alpha1.WorkspaceTypeReference) error {
		if seen[ref.String()] {
			return nil
		}
		seen[ref.String()] = true
		types, refs = append(types, wt), append(refs, ref)
		for _, ext := range wt.Spec.Extend.With {
			ewt, eref, err := r.Resolve(ext, logicalcluster.Path(ref.Path))
			if err != nil {
				return fmt.Errorf("type %s extends %s: %w", ref.String(), ext.String(), err)
			}
			if err := walk(ewt, eref); err != nil {
				return err
			}
		}
		return nil
	}
	return types, refs, walk(wt, ref)
}

func sameType(a, b tenancyv1alpha1.WorkspaceTypeReference) bool {
	return a.Name == b.Name && a.Path == b.Path
}

// allows tells whether a selector admits any of the given types (a type and
// the types it extends all count as that type).
func allows(sel *tenancyv1alpha1.WorkspaceTypeSelector, candidates []tenancyv1alpha1.WorkspaceTypeReference, selectorPath string) bool {
	if sel == nil {
		return true
	}
	if sel.None {
		return false
	}
	if len(sel.Types) == 0 {
		return true
	}
	for _, t := range sel.Types {
		if t.Path == "" {
			t.Path = selectorPath
		}
		for _, c := range candidates {
			if sameType(t, c) {
				return true
			}
		}
	}
	return false
}

// CheckParentChild returns an error when a child of childRefs may not be
// created in a parent of parentRefs (first reference is the type itself).
func CheckParentChild(parent *tenancyv1alpha1.WorkspaceType, parentRefs []tenancyv1alpha1.WorkspaceTypeReference,
	child *tenancyv1alpha1.WorkspaceType, childRefs []tenancyv1alpha1.WorkspaceTypeReference) error {
	if !allows(child.Spec.LimitAllowedParents, parentRefs, childRefs[0].Path) {
		return fmt.Errorf("workspace type %s may not be created in a workspace of type %s (limitAllowedParents)", childRefs[0].String(), parentRefs[0].String())
	}
	if !allows(parent.Spec.LimitAllowedChildren, childRefs, parentRefs[0].Path) {
		return fmt.Errorf("a workspace of type %s may not have children of type %s (limitAllowedChildren)", parentRefs[0].String(), childRefs[0].String())
	}
	return nil
}

// Lifecycle returns the initializers and terminators of a workspace whose
// type and the types it extends are types: each type's own, and, as kcp
// does, the system initializer system:apibindings when any of them has
// default APIBindings (a workspace without them gets no such step).
func Lifecycle(types []*tenancyv1alpha1.WorkspaceType) ([]corev1alpha1.LogicalClusterInitializer, []corev1alpha1.LogicalClusterTerminator) {
	var initializers []corev1alpha1.LogicalClusterInitializer
	var terminators []corev1alpha1.LogicalClusterTerminator
	bindings := false
	for _, t := range types {
		if t.Spec.Initializer {
			initializers = append(initializers, tenancyv1alpha1.InitializerForType(t))
		}
		if t.Spec.Terminator {
			terminators = append(terminators, tenancyv1alpha1.TerminatorForType(t))
		}
		bindings = bindings || len(t.Spec.DefaultAPIBindings) > 0
	}
	if bindings {
		initializers = append(initializers, tenancyv1alpha1.WorkspaceAPIBindingsInitializer)
	}
	return initializers, terminators
}
