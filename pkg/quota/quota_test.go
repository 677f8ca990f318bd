package quota

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestCountedResourcesReadsCountNamesAndLegacyAliases(t *testing.T) {
	hard := corev1.ResourceList{
		"count/widgets.example.com": resource.MustParse("1"),
		"count/configmaps":          resource.MustParse("1"),
		"secrets":                   resource.MustParse("1"),
		"count/events":              resource.MustParse("1"),
		"cpu":                       resource.MustParse("1"),
	}
	got := CountedResources(hard)
	want := []schema.GroupResource{{Resource: "configmaps"}, {Resource: "secrets"}, {Group: "example.com", Resource: "widgets"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("CountedResources = %v, want %v", got, want)
	}
}
