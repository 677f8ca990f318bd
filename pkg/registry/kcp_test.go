package registry

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	controlplaneapiserver "k8s.io/kubernetes/pkg/controlplane/apiserver"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	topologyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/topology/v1alpha1"
	"github.com/shardplane/shardplane/pkg/registry/registrytest"
)

var (
	_ controlplaneapiserver.RESTStorageProvider = CoreRESTStorageProvider{}
	_ controlplaneapiserver.RESTStorageProvider = TenancyRESTStorageProvider{}
	_ controlplaneapiserver.RESTStorageProvider = TopologyRESTStorageProvider{}
	_ controlplaneapiserver.RESTStorageProvider = MigrationRESTStorageProvider{}
)

func enabled(gvs ...schema.GroupVersion) *serverstorage.ResourceConfig {
	config := serverstorage.NewResourceConfig()
	config.EnableVersions(gvs...)
	return config
}

func TestProvidersServeEveryResourceWithStatus(t *testing.T) {
	config := enabled(corev1alpha1.SchemeGroupVersion, tenancyv1alpha1.SchemeGroupVersion, topologyv1alpha1.SchemeGroupVersion, migrationv1alpha1.SchemeGroupVersion)
	for _, tc := range []struct {
		provider   controlplaneapiserver.RESTStorageProvider
		group      string
		resources  []string
		shortNames map[string][]string
		// createOnly are answered on create and never stored.
		createOnly map[string]bool
	}{
		{
			provider:  CoreRESTStorageProvider{},
			group:     "core.kcp.io",
			resources: []string{"logicalclusters", "logicalclusters/status", "shards", "shards/status"},
		},
		{
			provider:   TenancyRESTStorageProvider{},
			group:      "tenancy.kcp.io",
			resources:  []string{"workspaceauthenticationconfigurations", "workspaces", "workspaces/status", "workspacetypes", "workspacetypes/status"},
			shortNames: map[string][]string{"workspaces": {"ws"}},
		},
		{
			provider:  TopologyRESTStorageProvider{},
			group:     "topology.kcp.io",
			resources: []string{"partitions", "partitionsets", "partitionsets/status"},
		},
		{
			provider:   MigrationRESTStorageProvider{},
			group:      "migration.kcp.io",
			resources:  []string{"logicalclusterdumps", "logicalclustermigrations", "logicalclustermigrations/status"},
			createOnly: map[string]bool{"logicalclusterdumps": true},
		},
	} {
		t.Run(tc.group, func(t *testing.T) {
			if got := tc.provider.GroupName(); got != tc.group {
				t.Errorf("GroupName() = %q, want %q", got, tc.group)
			}
			info, err := tc.provider.NewRESTStorage(config, &registrytest.RESTOptionsGetter{})
			if err != nil {
				t.Fatal(err)
			}
			storage := info.VersionedResourcesStorageMap["v1alpha1"]
			keys := slices.Sorted(maps.Keys(storage))
			if !slices.Equal(keys, tc.resources) {
				t.Errorf("resources = %v, want %v", keys, tc.resources)
			}
			for resource, s := range storage {
				if tc.createOnly[resource] {
					if _, ok := s.(rest.Creater); !ok {
						t.Errorf("%s is not creatable", resource)
					}
					if _, ok := s.(rest.Getter); ok {
						t.Errorf("%s can be read back", resource)
					}
					continue
				}
				if _, ok := s.(rest.Patcher); !ok {
					t.Errorf("%s cannot be patched", resource)
				}
				if _, ok := s.(rest.ResetFieldsStrategy); !ok {
					t.Errorf("%s has no reset fields for server-side apply", resource)
				}
				_, creatable := s.(rest.Creater)
				if strings.HasSuffix(resource, "/status") {
					if creatable {
						t.Errorf("%s is creatable", resource)
					}
					continue
				}
				if !creatable {
					t.Errorf("%s is not creatable", resource)
				}
				if scoper, ok := s.(rest.Scoper); !ok || scoper.NamespaceScoped() {
					t.Errorf("%s is not cluster-scoped", resource)
				}
				if c, ok := s.(rest.CategoriesProvider); !ok || !slices.Equal(c.Categories(), []string{"kcp"}) {
					t.Errorf("%s is not in category kcp", resource)
				}
				if _, ok := s.(rest.SingularNameProvider); !ok {
					t.Errorf("%s has no singular name", resource)
				}
				var shortNames []string
				if p, ok := s.(rest.ShortNamesProvider); ok {
					shortNames = p.ShortNames()
				}
				if !slices.Equal(shortNames, tc.shortNames[resource]) {
					t.Errorf("%s short names = %v, want %v", resource, shortNames, tc.shortNames[resource])
				}
			}
		})
	}
}

func TestDisabledResourcesAreNotServed(t *testing.T) {
	config := enabled(tenancyv1alpha1.SchemeGroupVersion)
	config.DisableResources(tenancyv1alpha1.SchemeGroupVersion.WithResource("workspacetypes"))

	info, err := TenancyRESTStorageProvider{}.NewRESTStorage(config, &registrytest.RESTOptionsGetter{})
	if err != nil {
		t.Fatal(err)
	}
	storage := info.VersionedResourcesStorageMap["v1alpha1"]
	if _, ok := storage["workspacetypes"]; ok {
		t.Error("disabled workspacetypes are served")
	}
	if _, ok := storage["workspaces"]; !ok {
		t.Error("workspaces are not served")
	}

	info, err = CoreRESTStorageProvider{}.NewRESTStorage(config, &registrytest.RESTOptionsGetter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(info.VersionedResourcesStorageMap) != 0 {
		t.Errorf("a disabled group serves %v", info.VersionedResourcesStorageMap)
	}
}
