package apiextensions

import "testing"

func TestAcceptHeadersSelectDiscoveryForm(t *testing.T) {
	for _, tc := range []struct {
		accept           string
		aggregated, json bool
	}{
		{"", false, true},
		{"application/json", false, true},
		{"*/*", false, true},
		{"application/vnd.kubernetes.protobuf", false, false},
		{"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json", true, true},
		{"application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", true, false},
		{"application/json; as=APIGroupDiscoveryList; v=v2; g=apidiscovery.k8s.io", true, false},
		{"application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList", false, false},
	} {
		if got := acceptsAggregated(tc.accept); got != tc.aggregated {
			t.Errorf("acceptsAggregated(%q) = %v, want %v", tc.accept, got, tc.aggregated)
		}
		if got := acceptsJSON(tc.accept); got != tc.json {
			t.Errorf("acceptsJSON(%q) = %v, want %v", tc.accept, got, tc.json)
		}
	}
}
