package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/test/framework"
)

// shardsInOpenAPI tells whether the OpenAPI v3 document of core.kcp.io and
// the OpenAPI v2 document of cluster, read as client-go reads them (v3
// through the hashed links of /openapi/v3, v2 as protobuf), have Shards.
// It fails the test if a group version kcp's TestOpenAPIv3 expects is
// missing or core.kcp.io/v1alpha1 lacks LogicalClusters.
func shardsInOpenAPI(t *testing.T, e *wsEnv, cluster string) (v3, v2 bool, err error) {
	t.Helper()
	discovery := e.kube(t, kcpAdmin, cluster).Discovery()
	paths, err := discovery.OpenAPIV3().Paths()
	if err != nil {
		return false, false, fmt.Errorf("/openapi/v3: %w", err)
	}
	for _, want := range []string{"api/v1", "apis/admissionregistration.k8s.io/v1", "apis/authentication.k8s.io/v1",
		"apis/tenancy.kcp.io/v1alpha1", "apis/topology.kcp.io/v1alpha1", "apis/apis.kcp.io/v1alpha1", "apis/core.kcp.io/v1alpha1"} {
		if _, ok := paths[want]; !ok {
			t.Errorf("/openapi/v3 of %s lacks %s", cluster, want)
		}
	}
	gv, ok := paths["apis/core.kcp.io/v1alpha1"]
	if !ok {
		return false, false, fmt.Errorf("/openapi/v3 of %s lacks core.kcp.io/v1alpha1", cluster)
	}
	raw, err := gv.Schema("application/json")
	if err != nil {
		return false, false, fmt.Errorf("OpenAPI v3 of core.kcp.io/v1alpha1: %w", err)
	}
	var doc struct {
		Paths map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return false, false, fmt.Errorf("OpenAPI v3 of core.kcp.io/v1alpha1: %w", err)
	}
	if _, ok := doc.Paths["/apis/core.kcp.io/v1alpha1/logicalclusters"]; !ok {
		t.Errorf("OpenAPI v3 of core.kcp.io/v1alpha1 in %s lacks logicalclusters", cluster)
	}
	_, v3 = doc.Paths["/apis/core.kcp.io/v1alpha1/shards"]

	v2doc, err := discovery.OpenAPISchema()
	if err != nil {
		return false, false, fmt.Errorf("/openapi/v2: %w", err)
	}
	var definition bool
	for _, p := range v2doc.GetPaths().GetPath() {
		if p.GetName() == "/apis/core.kcp.io/v1alpha1/shards" {
			v2 = true
		}
	}
	for _, d := range v2doc.GetDefinitions().GetAdditionalProperties() {
		if strings.HasSuffix(d.GetName(), "v1alpha1.Shard") {
			definition = true
		}
	}
	if definition != v2 {
		t.Errorf("/openapi/v2 of %s: the Shard definition is there: %v, its paths: %v", cluster, definition, v2)
	}
	return v3, v2, nil
}

// TestOpenAPIListsShardsOnlyWhereTheyAreServed performs kcp's
// TestOpenAPIv3 (test/e2e/openapi): an organization's /openapi/v3 lists
// the built-in group versions and kcp's. kcp builds a workspace's
// documents from the APIs it serves, so Shards, served through the system
// export shards.core.kcp.io that root binds, are in root's documents and
// not in an organization's (v2 and v3) until it binds the export, as its
// discovery says (TestShardsAreServedWhereKCPServesThem).
func TestOpenAPIListsShardsOnlyWhereTheyAreServed(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaces(t)
	ctx := testContext(t)
	kcp := e.kcp(t, kcpAdmin)
	org := e.readyOrg(ctx, t, "openapi")

	if v3, v2, err := shardsInOpenAPI(t, e, "root"); err != nil || !v3 || !v2 {
		t.Errorf("root's OpenAPI: shards in v3 %v, in v2 %v (%v), want both", v3, v2, err)
	}
	if v3, v2, err := shardsInOpenAPI(t, e, org.path()); err != nil || v3 || v2 {
		t.Errorf("OpenAPI of %s: shards in v3 %v, in v2 %v (%v), want neither", org.path(), v3, v2, err)
	}

	if err := kcp.create(ctx, org.path(), apiBindingsGVR, bindingTo("shards", "root", "shards.core.kcp.io"), &apisv1alpha2.APIBinding{}); err != nil {
		t.Fatalf("bind root:shards.core.kcp.io in %s: %v", org.path(), err)
	}
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		v3, v2, err := shardsInOpenAPI(t, e, org.path())
		if err != nil {
			return err
		}
		if !v3 || !v2 {
			return fmt.Errorf("shards in v3 %v, in v2 %v", v3, v2)
		}
		return nil
	}, "Shards in the OpenAPI of %s once it binds their export", org.path())
}
