package v1alpha1

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/diff"
)

// The documents below are spelled as kcp spells them on the wire. Decoding
// them must not meet an unknown field, and encoding the result must give
// them back unchanged.
const logicalClusterJSON = `{
  "apiVersion": "core.kcp.io/v1alpha1",
  "kind": "LogicalCluster",
  "metadata": {
    "name": "cluster",
    "annotations": {"kcp.io/path": "root:org", "internal.tenancy.kcp.io/type": "root:organization"},
    "finalizers": ["core.kcp.io/logicalcluster-deletion", "kcp.io/has-terminators"]
  },
  "spec": {
    "directlyDeletable": true,
    "owner": {
      "apiVersion": "tenancy.kcp.io/v1alpha1",
      "resource": "workspaces",
      "name": "org",
      "namespace": "ns",
      "cluster": "root",
      "uid": "5e7c1a"
    },
    "initializers": ["root:organization", "system:apibindings"],
    "terminators": ["root:organization"]
  },
  "status": {
    "URL": "https://kcp.example.com/clusters/root:org",
    "phase": "Initializing",
    "conditions": [{
      "type": "WorkspaceInitialized",
      "status": "False",
      "severity": "Info",
      "lastTransitionTime": "2024-05-01T10:00:00Z",
      "reason": "InitializerExists",
      "message": "waiting for root:organization"
    }],
    "initializers": ["root:organization"],
    "terminators": ["root:organization"]
  }
}`

const shardJSON = `{
  "apiVersion": "core.kcp.io/v1alpha1",
  "kind": "Shard",
  "metadata": {"name": "root", "labels": {"name": "root", "region": "eu"}},
  "spec": {
    "baseURL": "https://10.0.0.1:6443",
    "externalURL": "https://kcp.example.com",
    "virtualWorkspaceURL": "https://10.0.0.1:6444"
  },
  "status": {
    "capacity": {"logicalclusters": "1k"},
    "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00Z"}]
  }
}`

func TestWireFormatRoundTrips(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		into runtime.Object
	}{
		{name: "LogicalCluster", doc: logicalClusterJSON, into: &LogicalCluster{}},
		{name: "Shard", doc: shardJSON, into: &Shard{}},
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
	lc := &LogicalCluster{}
	if err := json.Unmarshal([]byte(logicalClusterJSON), lc); err != nil {
		t.Fatal(err)
	}
	if !lc.Spec.DirectlyDeletable || lc.Spec.Owner == nil || lc.Spec.Owner.UID != "5e7c1a" || lc.Spec.Owner.Cluster != "root" {
		t.Errorf("spec not decoded from kcp's field names: %+v", lc.Spec)
	}
	if lc.Status.URL != "https://kcp.example.com/clusters/root:org" || lc.Status.Phase != LogicalClusterPhaseInitializing {
		t.Errorf("status not decoded from kcp's field names: %+v", lc.Status)
	}
	if c := lc.Status.Conditions.Get("WorkspaceInitialized"); c == nil || c.Severity != "Info" || c.LastTransitionTime.IsZero() {
		t.Errorf("condition not decoded from kcp's field names: %+v", lc.Status.Conditions)
	}

	shard := &Shard{}
	if err := json.Unmarshal([]byte(shardJSON), shard); err != nil {
		t.Fatal(err)
	}
	if shard.Spec.BaseURL == "" || shard.Spec.ExternalURL == "" || shard.Spec.VirtualWorkspaceURL == "" {
		t.Errorf("shard spec not decoded from kcp's field names: %+v", shard.Spec)
	}
	if q := shard.Status.Capacity["logicalclusters"]; q.Value() != 1000 {
		t.Errorf("capacity = %v, want 1k", q.String())
	}
}

func TestCodecDecodesIntoRegisteredTypes(t *testing.T) {
	scheme := newScheme(t)
	codecs := serializer.NewCodecFactory(scheme)
	obj, gvk, err := codecs.UniversalDecoder(SchemeGroupVersion).Decode([]byte(shardJSON), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if gvk.Kind != "Shard" || gvk.GroupVersion() != SchemeGroupVersion {
		t.Errorf("gvk = %v", gvk)
	}
	if _, ok := obj.(*Shard); !ok {
		t.Fatalf("decoded %T, want *Shard", obj)
	}
}
