package v1alpha1

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
)

// The documents below are spelled as kcp spells them on the wire. Decoding
// them must not meet an unknown field, and encoding the result must give
// them back unchanged.
const workspaceJSON = `{
  "apiVersion": "tenancy.kcp.io/v1alpha1",
  "kind": "Workspace",
  "metadata": {
    "name": "team-a",
    "labels": {"tenancy.kcp.io/phase": "Ready", "region": "eu"},
    "finalizers": ["core.kcp.io/logicalcluster"]
  },
  "spec": {
    "type": {"name": "team", "path": "root"},
    "location": {"selector": {"matchLabels": {"region": "eu"}}},
    "cluster": "2x8j4k1m9q0w3e5r",
    "URL": "https://kcp.example.com/clusters/root:org:team-a",
    "mount": {"ref": {"apiVersion": "mounts.contrib.kcp.io/v1alpha1", "kind": "KubeCluster", "name": "proxy", "namespace": "ns"}}
  },
  "status": {
    "phase": "Ready",
    "conditions": [
      {"type": "WorkspaceScheduled", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00Z"},
      {"type": "WorkspaceInitialized", "status": "True", "lastTransitionTime": "2024-05-01T10:00:01Z"}
    ],
    "initializers": ["system:apibindings"],
    "terminators": ["root:team"]
  }
}`

const workspaceTypeJSON = `{
  "apiVersion": "tenancy.kcp.io/v1alpha1",
  "kind": "WorkspaceType",
  "metadata": {"name": "organization", "annotations": {"kcp.io/path": "root"}},
  "spec": {
    "initializer": true,
    "terminator": true,
    "extend": {"with": [{"name": "universal", "path": "root"}]},
    "additionalWorkspaceLabels": {"kcp.io/org": "true"},
    "defaultChildWorkspaceType": {"name": "universal", "path": "root"},
    "limitAllowedChildren": {"types": [{"name": "team", "path": "root"}]},
    "limitAllowedParents": {"none": true},
    "defaultAPIBindings": [{"path": "root", "export": "tenancy.kcp.io"}]
  },
  "status": {
    "conditions": [{"type": "VirtualWorkspaceURLsReady", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00Z"}],
    "virtualWorkspaces": [
      {"url": "https://vw.example.com/services/initializingworkspaces/root:organization", "type": "initializing"},
      {"url": "https://vw.example.com/services/terminatingworkspaces/root:organization", "type": "terminating"}
    ]
  }
}`

func TestWireFormatRoundTrips(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		into runtime.Object
	}{
		{name: "Workspace", doc: workspaceJSON, into: &Workspace{}},
		{name: "WorkspaceType", doc: workspaceTypeJSON, into: &WorkspaceType{}},
	}
	for _, tt := range tests {
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

func TestWireFieldNames(t *testing.T) {
	ws := &Workspace{}
	if err := json.Unmarshal([]byte(workspaceJSON), ws); err != nil {
		t.Fatal(err)
	}
	want := WorkspaceSpec{
		Type:    &WorkspaceTypeReference{Name: "team", Path: "root"},
		Cluster: "2x8j4k1m9q0w3e5r",
		URL:     "https://kcp.example.com/clusters/root:org:team-a",
		Mount:   &Mount{Reference: ObjectReference{APIVersion: "mounts.contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: "proxy", Namespace: "ns"}},
	}
	got := ws.Spec
	got.Location = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("workspace spec not decoded from kcp's field names (-want +got):\n%s", diff.Diff(want, got))
	}
	if ws.Spec.Location == nil || ws.Spec.Location.Selector.MatchLabels["region"] != "eu" {
		t.Errorf("location not decoded: %+v", ws.Spec.Location)
	}
	if !ws.Status.Conditions.IsTrue(WorkspaceScheduled) || len(ws.Status.Terminators) != 1 {
		t.Errorf("workspace status not decoded: %+v", ws.Status)
	}

	wt := &WorkspaceType{}
	if err := json.Unmarshal([]byte(workspaceTypeJSON), wt); err != nil {
		t.Fatal(err)
	}
	spec := wt.Spec
	if !spec.Initializer || !spec.Terminator || len(spec.Extend.With) != 1 ||
		spec.DefaultChildWorkspaceType == nil || spec.DefaultChildWorkspaceType.Name != UniversalWorkspaceTypeName ||
		spec.LimitAllowedParents == nil || !spec.LimitAllowedParents.None ||
		spec.LimitAllowedChildren == nil || len(spec.LimitAllowedChildren.Types) != 1 ||
		len(spec.DefaultAPIBindings) != 1 || spec.DefaultAPIBindings[0].Export != "tenancy.kcp.io" ||
		spec.AdditionalWorkspaceLabels["kcp.io/org"] != "true" {
		t.Errorf("workspace type spec not decoded from kcp's field names: %+v", spec)
	}
	if len(wt.Status.VirtualWorkspaces) != 2 || wt.Status.VirtualWorkspaces[1].Type != VirtualWorkspaceTypeTerminating {
		t.Errorf("virtual workspaces not decoded: %+v", wt.Status.VirtualWorkspaces)
	}
}
