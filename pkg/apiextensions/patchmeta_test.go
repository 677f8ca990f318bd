package apiextensions

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
)

// rolloutSchema is the structural schema of a kind of a built-in group
// that client-go does not know: steps is a map list keyed by name, hosts a
// set, args an atomic list, selector a map of strings.
func rolloutSchema() *structuralschema.Structural {
	str := structuralschema.Structural{Generic: structuralschema.Generic{Type: "string"}}
	step := structuralschema.Structural{
		Generic:    structuralschema.Generic{Type: "object"},
		Properties: map[string]structuralschema.Structural{"name": str, "weight": {Generic: structuralschema.Generic{Type: "integer"}}},
	}
	return &structuralschema.Structural{
		Generic: structuralschema.Generic{Type: "object"},
		Properties: map[string]structuralschema.Structural{
			"metadata": {Generic: structuralschema.Generic{Type: "object"}},
			"spec": {Generic: structuralschema.Generic{Type: "object"}, Properties: map[string]structuralschema.Structural{
				"steps":    {Generic: structuralschema.Generic{Type: "array"}, Items: &step, Extensions: structuralschema.Extensions{XListType: ptr.To("map"), XListMapKeys: []string{"name"}}},
				"hosts":    {Generic: structuralschema.Generic{Type: "array"}, Items: &str, Extensions: structuralschema.Extensions{XListType: ptr.To("set")}},
				"args":     {Generic: structuralschema.Generic{Type: "array"}, Items: &str},
				"pairs":    {Generic: structuralschema.Generic{Type: "array"}, Items: &step, Extensions: structuralschema.Extensions{XListType: ptr.To("map"), XListMapKeys: []string{"name", "weight"}}},
				"selector": {Generic: structuralschema.Generic{Type: "object"}, AdditionalProperties: &structuralschema.StructuralOrBool{Structural: &str}},
			}},
		},
	}
}

func TestSchemaStrategicPatchMergesListsAsTheSchemaSays(t *testing.T) {
	meta := schemaPatchMeta{schema: rolloutSchema(), objectRoot: true}
	for _, tc := range []struct {
		name, original, patch, want string
	}{{
		name:     "map list merged by its key",
		original: `{"spec":{"steps":[{"name":"a","weight":1},{"name":"b","weight":2}]}}`,
		patch:    `{"spec":{"steps":[{"name":"b","weight":5},{"name":"c","weight":3}]}}`,
		want:     `{"spec":{"steps":[{"name":"a","weight":1},{"name":"b","weight":5},{"name":"c","weight":3}]}}`,
	}, {
		name:     "map list item deleted by directive",
		original: `{"spec":{"steps":[{"name":"a","weight":1},{"name":"b","weight":2}]}}`,
		patch:    `{"spec":{"steps":[{"name":"a","$patch":"delete"}]}}`,
		want:     `{"spec":{"steps":[{"name":"b","weight":2}]}}`,
	}, {
		name:     "set merged",
		original: `{"spec":{"hosts":["x","y"]}}`,
		patch:    `{"spec":{"hosts":["z","y"]}}`,
		want:     `{"spec":{"hosts":["z","x","y"]}}`,
	}, {
		name:     "atomic list replaced",
		original: `{"spec":{"args":["x","y"]}}`,
		patch:    `{"spec":{"args":["z"]}}`,
		want:     `{"spec":{"args":["z"]}}`,
	}, {
		name:     "map list of two keys replaced",
		original: `{"spec":{"pairs":[{"name":"a","weight":1}]}}`,
		patch:    `{"spec":{"pairs":[{"name":"a","weight":2}]}}`,
		want:     `{"spec":{"pairs":[{"name":"a","weight":2}]}}`,
	}, {
		name:     "maps merged and fields removed by null",
		original: `{"spec":{"selector":{"app":"web","tier":"front"}}}`,
		patch:    `{"spec":{"selector":{"tier":null,"zone":"a"}}}`,
		want:     `{"spec":{"selector":{"app":"web","zone":"a"}}}`,
	}, {
		name:     "metadata merged as ObjectMeta: finalizers as a set, labels as a map",
		original: `{"metadata":{"finalizers":["f1"],"labels":{"a":"1"}}}`,
		patch:    `{"metadata":{"finalizers":["f2"],"labels":{"b":"2"}}}`,
		want:     `{"metadata":{"finalizers":["f2","f1"],"labels":{"a":"1","b":"2"}}}`,
	}, {
		name:     "fields the schema does not name merge as in a JSON merge patch",
		original: `{"spec":{"unknown":{"list":[1,2],"x":1}}}`,
		patch:    `{"spec":{"unknown":{"list":[3],"y":2}}}`,
		want:     `{"spec":{"unknown":{"list":[3],"x":1,"y":2}}}`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			patch := map[string]interface{}{}
			if err := json.Unmarshal([]byte(tc.patch), &patch); err != nil {
				t.Fatal(err)
			}
			got, err := applyStrategicPatch([]byte(tc.original), patch, meta)
			if err != nil {
				t.Fatal(err)
			}
			var gotObj, wantObj interface{}
			_ = json.Unmarshal(got, &gotObj)
			_ = json.Unmarshal([]byte(tc.want), &wantObj)
			if !reflect.DeepEqual(gotObj, wantObj) {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestSchemaStrategicPatchLeavesItsPatchForTheNextApplication(t *testing.T) {
	meta := schemaPatchMeta{schema: rolloutSchema(), objectRoot: true}
	patch := map[string]interface{}{"spec": map[string]interface{}{"steps": []interface{}{map[string]interface{}{"name": "a", "$patch": "delete"}}}}
	for i := 0; i < 2; i++ {
		got, err := applyStrategicPatch([]byte(`{"spec":{"steps":[{"name":"a"},{"name":"b"}]}}`), patch, meta)
		if err != nil || string(got) != `{"spec":{"steps":[{"name":"b"}]}}` {
			t.Fatalf("application %d: %s, %v", i, got, err)
		}
	}
}

func TestSchemaStrategicPatchAnswersBadPatchesWith4xx(t *testing.T) {
	meta := schemaPatchMeta{schema: rolloutSchema(), objectRoot: true}
	for name, patch := range map[string]map[string]interface{}{
		"unknown directive":        {"spec": map[string]interface{}{"$patch": "explode"}},
		"bad retainKeys":           {"spec": map[string]interface{}{"$retainKeys": "steps"}},
		"unknown ObjectMeta field": {"metadata": map[string]interface{}{"bogus": map[string]interface{}{"a": "b"}}},
	} {
		_, err := applyStrategicPatch([]byte(`{"metadata":{"bogus":{"x":"y"}},"spec":{"steps":[{"name":"a"}]}}`), patch, meta)
		status, ok := err.(apierrors.APIStatus)
		if !ok || status.Status().Code < http.StatusBadRequest || status.Status().Code >= http.StatusInternalServerError {
			t.Errorf("%s: %v, want a 4xx API error", name, err)
		}
	}
}
