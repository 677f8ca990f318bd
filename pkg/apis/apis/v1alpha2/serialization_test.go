package v1alpha2

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
)

// The documents below are spelled as kcp spells them on the wire. Decoding
// them must not meet an unknown field, and encoding the result must give
// them back unchanged.
const (
	apiExportJSON = `{
  "apiVersion": "apis.kcp.io/v1alpha2",
  "kind": "APIExport",
  "metadata": {"name": "tenancy.kcp.io"},
  "spec": {
    "resources": [
      {"name": "workspaces", "group": "tenancy.kcp.io", "schema": "v250421-25d98218b.workspaces.tenancy.kcp.io", "storage": {"crd": {}}},
      {"name": "things", "group": "example.io", "schema": "v1.things.example.io", "storage": {"virtual": {"reference": {"apiGroup": "example.io", "kind": "ThingSlice", "name": "s"}}}}
    ],
    "identity": {"secretRef": {"namespace": "kcp-system", "name": "tenancy.kcp.io"}},
    "maximalPermissionPolicy": {"local": {}},
    "permissionClaims": [{"resource": "configmaps", "verbs": ["get", "list"], "defaultSelector": {"matchLabels": {"a": "b"}}}]
  },
  "status": {
    "identityHash": "8a4a1b2c",
    "conditions": [{"type": "IdentityValid", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00Z"}],
    "virtualWorkspaces": [{"url": "https://vw.example.com/services/apiexport/root/tenancy.kcp.io"}]
  }
}`
	apiBindingJSON = `{
  "apiVersion": "apis.kcp.io/v1alpha2",
  "kind": "APIBinding",
  "metadata": {"name": "tenancy.kcp.io"},
  "spec": {
    "reference": {"export": {"path": "root", "name": "tenancy.kcp.io"}},
    "permissionClaims": [{"resource": "configmaps", "verbs": ["*"], "selector": {"matchAll": true}, "state": "Accepted"}]
  },
  "status": {
    "apiExportClusterName": "root",
    "boundResources": [{"group": "tenancy.kcp.io", "resource": "workspaces", "schema": {"name": "v1.workspaces.tenancy.kcp.io", "UID": "u-1", "identityHash": "8a4a1b2c"}, "storageVersions": ["v1alpha1"]}],
    "phase": "Bound",
    "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00Z"}],
    "appliedPermissionClaims": [{"resource": "configmaps", "verbs": ["*"], "selector": {"matchAll": true}}],
    "exportPermissionClaims": [{"resource": "configmaps", "verbs": ["*"]}]
  }
}`
	apiResourceSchemaJSON = `{
  "apiVersion": "apis.kcp.io/v1alpha1",
  "kind": "APIResourceSchema",
  "metadata": {"name": "v1.widgets.example.io"},
  "spec": {
    "group": "example.io",
    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList", "categories": ["all"]},
    "scope": "Namespaced",
    "nameValidation": "DNS1123Subdomain",
    "versions": [{
      "name": "v1", "served": true, "storage": true,
      "schema": {"type": "object"},
      "subresources": {"status": {}},
      "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
      "selectableFields": [{"jsonPath": ".spec.size"}]
    }],
    "conversion": {"strategy": "None"}
  }
}`
	apiExportEndpointSliceJSON = `{
  "apiVersion": "apis.kcp.io/v1alpha1",
  "kind": "APIExportEndpointSlice",
  "metadata": {"name": "tenancy.kcp.io"},
  "spec": {"export": {"path": "root", "name": "tenancy.kcp.io"}, "partition": "eu"},
  "status": {
    "conditions": [{"type": "APIExportValid", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00Z"}],
    "endpoints": [{"url": "https://vw.example.com/services/apiexport/root/tenancy.kcp.io"}],
    "shardSelector": "region=eu"
  }
}`
)

func TestWireFormatRoundTrips(t *testing.T) {
	for _, tt := range []struct {
		name string
		doc  string
		into runtime.Object
	}{
		{"APIExport", apiExportJSON, &APIExport{}},
		{"APIBinding", apiBindingJSON, &APIBinding{}},
		{"APIResourceSchema", apiResourceSchemaJSON, &apisv1alpha1.APIResourceSchema{}},
		{"APIExportEndpointSlice", apiExportEndpointSliceJSON, &apisv1alpha1.APIExportEndpointSlice{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dec := json.NewDecoder(bytes.NewReader([]byte(tt.doc)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(tt.into); err != nil {
				t.Fatalf("decode: %v", err)
			}
			out, err := json.Marshal(tt.into)
			if err != nil {
				t.Fatal(err)
			}
			var want, got map[string]any
			if err := json.Unmarshal([]byte(tt.doc), &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(want, got) {
				t.Errorf("round trip changed the document (-want +got):\n%s", diff.Diff(want, got))
			}
		})
	}
}
