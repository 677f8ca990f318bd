package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/test/framework"
)

// kcp's system exports in root.
const (
	tenancyExport  = "tenancy.kcp.io"
	topologyExport = "topology.kcp.io"
	shardsExport   = "shards.core.kcp.io"
)

// TestRootHoldsKcpSystemExports: root holds kcp's APIExports of its own
// kinds, tenancy.kcp.io (workspaces, workspacetypes), topology.kcp.io
// (partitions, partitionsets) and shards.core.kcp.io (shards), each with an identity, and binds them itself. Organization and
// team workspaces are Ready only with their APIBinding to
// root:tenancy.kcp.io Bound, so a client that waits for the bindings of a
// new workspace proceeds at once; the shard keeps serving those kinds
// itself, listed once in discovery. Workspaces are listed across all
// logical clusters by the export's identity, and a wrong identity is 404.
// An identity given with --root-identities-file is the export's, and no
// identity changes across restarts.
func TestRootHoldsKcpSystemExports(t *testing.T) {
	t.Parallel()

	t.Run("ExportsBindingsAndIdentityWildcard", func(t *testing.T) {
		t.Parallel()
		e := sharedWorkspaces(t)
		ctx := testContext(t)
		kcp := e.kcp(t, kcpAdmin)

		tenancy := requireSystemExport(ctx, t, e, tenancyExport, "workspaceauthenticationconfigurations.tenancy.kcp.io", "workspaces.tenancy.kcp.io", "workspacetypes.tenancy.kcp.io")
		if p := tenancy.Spec.MaximalPermissionPolicy; p == nil || p.Local == nil {
			t.Errorf("APIExport root:%s has maximalPermissionPolicy %+v, want local as in kcp", tenancyExport, p)
		}
		requireSystemExport(ctx, t, e, shardsExport, "shards.core.kcp.io")
		requireSystemExport(ctx, t, e, topologyExport, "partitions.topology.kcp.io", "partitionsets.topology.kcp.io")
		for _, name := range []string{tenancyExport, topologyExport, shardsExport} {
			waitForBinding(t, kcp, "root", name, "Bound in root", bound)
		}

		// An organization and a team in it: Ready means the default
		// binding is Bound, with the export's identity.
		org := createWorkspace(ctx, t, kcp, "root", framework.UniqueClusterName("sysexp"), nil)
		org = waitForPhase(t, kcp, org, corev1alpha1.LogicalClusterPhaseReady)
		requireTenancyBinding(ctx, t, kcp, org, tenancy.Status.IdentityHash)
		// kcp's universal type binds topology.kcp.io too.
		requireDefaultBindingBound(ctx, t, kcp, org, "root", topologyExport)
		team := createWorkspace(ctx, t, kcp, org.path(), "team", typeRef("team", "root"))
		team = waitForPhase(t, kcp, team, corev1alpha1.LogicalClusterPhaseReady)
		requireTenancyBinding(ctx, t, kcp, team, tenancy.Status.IdentityHash)

		// The kinds stay the shard's own: listed once, served as before.
		t.Run("KindsStayServedAndListedOnce", func(t *testing.T) {
			requireKubectl(t)
			out := kubectl(ctx, t, e.s, "", serverFlag(t, e.s, team.cluster()), "api-resources", "-o", "name")
			count := map[string]int{}
			for _, name := range strings.Fields(out) {
				count[name]++
			}
			for _, name := range []string{"workspaces.tenancy.kcp.io", "workspacetypes.tenancy.kcp.io", "partitions.topology.kcp.io", "partitionsets.topology.kcp.io", "apibindings.apis.kcp.io"} {
				if count[name] != 1 {
					t.Errorf("kubectl api-resources in %s lists %s %d times, want once:\n%s", team.path(), name, count[name], out)
				}
			}
			explain := kubectl(ctx, t, e.s, "", serverFlag(t, e.s, team.cluster()), "explain", "workspaces.spec.type")
			if !strings.Contains(explain, "which decides how it is initialized") {
				t.Errorf("kubectl explain workspaces.spec.type in %s does not document the field:\n%s", team.path(), explain)
			}
			// The OpenAPI of the group is the built-in document, not one made
			// from the export's schemas: it has the built-in watch paths.
			code, body := rawGet(ctx, t, e.s, team.cluster(), "/openapi/v3/apis/tenancy.kcp.io/v1alpha1", "application/json")
			var doc struct {
				Paths map[string]json.RawMessage `json:"paths"`
			}
			if err := json.Unmarshal([]byte(body), &doc); code != 200 || err != nil {
				t.Errorf("OpenAPI v3 of tenancy.kcp.io/v1alpha1 in %s: HTTP %d, %v:\n%.300s", team.path(), code, err, body)
			}
			for _, p := range []string{"/apis/tenancy.kcp.io/v1alpha1/watch/workspaces", "/apis/tenancy.kcp.io/v1alpha1/workspaces/{name}/status"} {
				if _, ok := doc.Paths[p]; !ok {
					t.Errorf("OpenAPI v3 of tenancy.kcp.io/v1alpha1 in %s lacks the built-in path %s", team.path(), p)
				}
			}
			children := &corev1alpha1.LogicalClusterList{}
			if err := kcp.list(ctx, team.cluster(), logicalClustersGVR, children); err != nil {
				t.Errorf("list logicalclusters in %s: %v", team.path(), err)
			}
			if _, err := createWorkspaceOnce(ctx, kcp, team.path(), "child", nil); err != nil {
				t.Errorf("create a workspace in %s, which binds tenancy.kcp.io: %v", team.path(), err)
			}
		})

		t.Run("WildcardListByIdentity", func(t *testing.T) {
			byIdentity := workspacesGVR.GroupVersion().WithResource("workspaces:" + tenancy.Status.IdentityHash)
			found := e.wildcardItemsIn(ctx, t, byIdentity, "root", org.cluster())
			for _, want := range []string{"root//" + org.name, org.cluster() + "//team"} {
				if !slices.Contains(found, want) {
					t.Errorf("wildcard list of %s lacks %s; found %v", byIdentity.Resource, want, found)
				}
			}
			dyn, err := dynamic.NewForConfig(e.config(t, shardAdmin, "*"))
			if err != nil {
				t.Fatal(err)
			}
			wrong := workspacesGVR.GroupVersion().WithResource("workspaces:" + hexSHA256([]byte("not the identity")))
			_, err = dyn.Resource(wrong).List(ctx, metav1.ListOptions{})
			requireStatus(t, err, 404, "wildcard list of workspaces with a wrong identity")
			// Shards are qualified by their own export's identity.
			shards := requireSystemExport(ctx, t, e, shardsExport, "shards.core.kcp.io")
			found = e.wildcardItemsIn(ctx, t, shardsGVR.GroupVersion().WithResource("shards:"+shards.Status.IdentityHash), "root")
			if !slices.Contains(found, "root//"+corev1alpha1.RootShard) {
				t.Errorf("wildcard list of shards by identity lacks the root shard; found %v", found)
			}
			_, err = dyn.Resource(shardsGVR.GroupVersion().WithResource("shards:"+tenancy.Status.IdentityHash)).List(ctx, metav1.ListOptions{})
			requireStatus(t, err, 404, "wildcard list of shards with the identity of tenancy.kcp.io")
		})
	})

	t.Run("IdentitiesFileAndRestart", func(t *testing.T) {
		t.Parallel()
		key := "e2e-identity-" + uniqueName("k")
		file := filepath.Join(t.TempDir(), "identities.yaml")
		writeIdentities(t, file, key)
		e := &wsEnv{s: framework.StartShard(t, framework.WithArgs("--root-identities-file="+file))}
		e.waitForRootBootstrap(t)
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		kcp := e.kcp(t, kcpAdmin)

		tenancy := requireSystemExport(ctx, t, e, tenancyExport, "workspaceauthenticationconfigurations.tenancy.kcp.io", "workspaces.tenancy.kcp.io", "workspacetypes.tenancy.kcp.io")
		if want := hexSHA256([]byte(key)); tenancy.Status.IdentityHash != want {
			t.Errorf("identity of root:%s is %s, want %s, the hash of the key in --root-identities-file", tenancyExport, tenancy.Status.IdentityHash, want)
		}
		shards := requireSystemExport(ctx, t, e, shardsExport, "shards.core.kcp.io")
		org := createWorkspace(ctx, t, kcp, "root", framework.UniqueClusterName("ids"), nil)
		org = waitForPhase(t, kcp, org, corev1alpha1.LogicalClusterPhaseReady)
		requireTenancyBinding(ctx, t, kcp, org, tenancy.Status.IdentityHash)

		// Another key in the file changes nothing: the identity is set.
		writeIdentities(t, file, key+"-changed")
		e.s.Restart(t)
		e.waitForRootBootstrap(t)
		for name, want := range map[string]string{tenancyExport: tenancy.Status.IdentityHash, shardsExport: shards.Status.IdentityHash} {
			got := waitForIdentity(t, kcp, "root", name, corev1.ConditionTrue)
			if got.Status.IdentityHash != want {
				t.Errorf("identity of root:%s changed across a restart: %s, then %s", name, want, got.Status.IdentityHash)
			}
		}
		b := requireTenancyBinding(ctx, t, kcp, waitForPhase(t, kcp, org, corev1alpha1.LogicalClusterPhaseReady), tenancy.Status.IdentityHash)
		if !bound(b) {
			t.Errorf("binding %s of %s is %s after a restart", b.Name, org.path(), b.Status.Phase)
		}
		found := e.wildcardItemsIn(ctx, t, workspacesGVR.GroupVersion().WithResource("workspaces:"+tenancy.Status.IdentityHash), "root")
		if !slices.Contains(found, "root//"+org.name) {
			t.Errorf("after a restart, the wildcard list of workspaces by identity lacks %s; found %v", org.path(), found)
		}
	})
}

// writeIdentities writes a --root-identities-file with key as the identity
// of tenancy.kcp.io.
func writeIdentities(t *testing.T, file, key string) {
	t.Helper()
	data := "identities:\n- export: " + tenancyExport + "\n  identity: " + key + "\n"
	if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// requireSystemExport waits for a system export of root to have its
// identity and checks that it publishes resources (as <resource>.<group>)
// with schemas that exist in root, and that its identity is the hash of
// the key in root's secret kcp-system/<export>.
func requireSystemExport(ctx context.Context, t *testing.T, e *wsEnv, name string, resources ...string) *apisv1alpha2.APIExport {
	t.Helper()
	kcp := e.kcp(t, kcpAdmin)
	export := waitForIdentity(t, kcp, "root", name, corev1.ConditionTrue)
	published := sets.New[string]()
	for _, r := range export.Spec.Resources {
		published.Insert(r.Name + "." + r.Group)
		schema := &apisv1alpha1.APIResourceSchema{}
		if err := kcp.get(ctx, "root", apiResourceSchemasGVR, r.Schema, schema); err != nil {
			t.Errorf("APIResourceSchema %s of APIExport root:%s: %v", r.Schema, name, err)
			continue
		}
		if schema.Spec.Group != r.Group || schema.Spec.Names.Plural != r.Name || !strings.HasSuffix(r.Schema, "."+r.Name+"."+r.Group) {
			t.Errorf("APIResourceSchema %s defines %s.%s, published as %s.%s", r.Schema, schema.Spec.Names.Plural, schema.Spec.Group, r.Name, r.Group)
		}
	}
	if want := sets.New(resources...); !published.Equal(want) {
		t.Errorf("APIExport root:%s publishes %v, want %v", name, sets.List(published), sets.List(want))
	}
	secret, err := e.kube(t, kcpAdmin, "root").CoreV1().Secrets(apisv1alpha2.DefaultIdentitySecretNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("identity secret of APIExport root:%s: %v", name, err)
	}
	if got := hexSHA256(secret.Data[apisv1alpha1.SecretKeyAPIExportIdentity]); got != export.Status.IdentityHash {
		t.Errorf("APIExport root:%s has identity %s, but its secret's key hashes to %s", name, export.Status.IdentityHash, got)
	}
	return export
}

// requireTenancyBinding fails unless the Ready workspace w has its default
// APIBinding to root:tenancy.kcp.io Bound, binding workspaces and
// workspacetypes with identity; it returns the binding.
func requireTenancyBinding(ctx context.Context, t *testing.T, c *kcpREST, w ws, identity string) *apisv1alpha2.APIBinding {
	t.Helper()
	b := requireDefaultBindingBound(ctx, t, c, w, "root", tenancyExport)
	got := sets.New[string]()
	for _, br := range b.Status.BoundResources {
		got.Insert(br.Resource + "." + br.Group)
		if br.Schema.IdentityHash != identity {
			t.Errorf("binding %s of %s binds %s with identity %s, want %s", b.Name, w.path(), br.Resource, br.Schema.IdentityHash, identity)
		}
	}
	if want := sets.New("workspaceauthenticationconfigurations.tenancy.kcp.io", "workspaces.tenancy.kcp.io", "workspacetypes.tenancy.kcp.io"); !got.Equal(want) {
		t.Errorf("binding %s of %s binds %v, want %v", b.Name, w.path(), sets.List(got), sets.List(want))
	}
	return b
}
