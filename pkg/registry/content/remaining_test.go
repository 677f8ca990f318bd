package content

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestRemainingNamesResourcesAndFinalizersThatHoldTheCluster(t *testing.T) {
	var r Remaining
	if !r.Empty() || r.String() != "" {
		t.Fatalf("zero Remaining: Empty %v, String %q", r.Empty(), r.String())
	}
	configmaps := schema.GroupResource{Resource: "configmaps"}
	var inNamespace Remaining
	inNamespace.add(configmaps, []string{"example.com/hold"})
	inNamespace.add(configmaps, []string{"example.com/hold", "example.com/other"})
	r.merge(inNamespace)
	r.add(namespacesResource, nil)
	want := "Some resources are remaining: configmaps has 2 resource instances, namespaces has 1 resource instances; " +
		"Some content in the workspace has finalizers remaining: example.com/hold in 2 resource instances, example.com/other in 1 resource instances"
	if got := r.String(); got != want {
		t.Errorf("String() =\n%q\nwant\n%q", got, want)
	}
	if r.Empty() {
		t.Error("Empty() = true with objects remaining")
	}
}
