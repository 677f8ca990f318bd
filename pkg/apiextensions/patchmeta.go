package apiextensions

import (
	"reflect"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// schemaPatchMeta tells the strategic merge patch of a custom resource how
// to merge each field, from the structural schema of its version: a list
// of type map with one key merges its items by that key, a list of type set
// merges its values, every other list is replaced, as in a JSON merge
// patch. Object metadata merges as ObjectMeta's Go type says (owner
// references by uid, finalizers as a set), as for built-in kinds.
//
// The merge keys come from x-kubernetes-list-type and
// x-kubernetes-list-map-keys because a CRD's schema cannot carry
// x-kubernetes-patch-merge-key and x-kubernetes-patch-strategy: the
// apiextensions API has no field for them.
type schemaPatchMeta struct {
	schema *structuralschema.Structural
	// objectRoot tells whether schema is the schema of a whole object,
	// whose metadata is ObjectMeta.
	objectRoot bool
}

var _ strategicpatch.LookupPatchMeta = schemaPatchMeta{}

var objectMetaPatchMeta = strategicpatch.PatchMetaFromStruct{T: reflect.TypeOf(metav1.ObjectMeta{})}

// field is the schema of key in an object of s; nil where the schema says
// nothing of it (unknown fields preserved, or no schema at all).
func (m schemaPatchMeta) field(key string) *structuralschema.Structural {
	s := m.schema
	if s == nil {
		return nil
	}
	if p, ok := s.Properties[key]; ok {
		return &p
	}
	if s.AdditionalProperties != nil {
		return s.AdditionalProperties.Structural
	}
	return nil
}

func (m schemaPatchMeta) LookupPatchMetadataForStruct(key string) (strategicpatch.LookupPatchMeta, strategicpatch.PatchMeta, error) {
	if key == "metadata" && (m.objectRoot || m.schema != nil && m.schema.XEmbeddedResource) {
		return objectMetaPatchMeta, strategicpatch.PatchMeta{}, nil
	}
	return schemaPatchMeta{schema: m.field(key)}, strategicpatch.PatchMeta{}, nil
}

func (m schemaPatchMeta) LookupPatchMetadataForSlice(key string) (strategicpatch.LookupPatchMeta, strategicpatch.PatchMeta, error) {
	list := m.field(key)
	if list == nil {
		return schemaPatchMeta{}, strategicpatch.PatchMeta{}, nil
	}
	var meta strategicpatch.PatchMeta
	switch {
	case list.XListType == nil:
	case *list.XListType == "map" && len(list.XListMapKeys) == 1:
		meta.SetPatchStrategies([]string{"merge"})
		meta.SetPatchMergeKey(list.XListMapKeys[0])
	case *list.XListType == "set":
		meta.SetPatchStrategies([]string{"merge"})
	}
	// A map list with several keys is replaced whole: a strategic merge
	// patch merges by one key only, and merging by one of the keys would
	// fold items that differ in another.
	return schemaPatchMeta{schema: list.Items}, meta, nil
}

func (m schemaPatchMeta) Name() string {
	if m.schema == nil || m.schema.Type == "" {
		return "Struct"
	}
	return m.schema.Type
}
