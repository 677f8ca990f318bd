package apis

import (
	"maps"
	"slices"
	"testing"

	serverstorage "k8s.io/apiserver/pkg/server/storage"
	controlplaneapiserver "k8s.io/kubernetes/pkg/controlplane/apiserver"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	_ "github.com/shardplane/shardplane/pkg/apis/install"
	"github.com/shardplane/shardplane/pkg/registry/registrytest"
)

var _ controlplaneapiserver.RESTStorageProvider = RESTStorageProvider{}

func TestBothVersionsServeExportsAndBindingsFromOneStorage(t *testing.T) {
	config := serverstorage.NewResourceConfig()
	config.EnableVersions(apisv1alpha1.SchemeGroupVersion, apisv1alpha2.SchemeGroupVersion)
	getter := &registrytest.RESTOptionsGetter{}
	info, err := RESTStorageProvider{}.NewRESTStorage(config, getter)
	if err != nil {
		t.Fatal(err)
	}
	v1 := slices.Sorted(maps.Keys(info.VersionedResourcesStorageMap["v1alpha1"]))
	want1 := []string{"apibindings", "apibindings/status", "apiexportendpointslices", "apiexportendpointslices/status", "apiexports", "apiexports/status", "apiresourceschemas"}
	if !slices.Equal(v1, want1) {
		t.Errorf("v1alpha1 serves %v, want %v", v1, want1)
	}
	v2 := slices.Sorted(maps.Keys(info.VersionedResourcesStorageMap["v1alpha2"]))
	want2 := []string{"apibindings", "apibindings/status", "apiexports", "apiexports/status"}
	if !slices.Equal(v2, want2) {
		t.Errorf("v1alpha2 serves %v, want %v", v2, want2)
	}
	if info.VersionedResourcesStorageMap["v1alpha1"]["apiexports"] != info.VersionedResourcesStorageMap["v1alpha2"]["apiexports"] {
		t.Error("apiexports have a storage per version, want one")
	}
	if len(getter.Requested) != 4 {
		t.Errorf("storage requested for %v, want each of the 4 resources once", getter.Requested)
	}
	if got := info.PrioritizedVersions; len(got) != 2 || got[0] != apisv1alpha2.SchemeGroupVersion {
		t.Errorf("prioritized versions %v, want v1alpha2 first", got)
	}
	for gr := range StorageVersions {
		if !slices.Contains(getter.Requested, gr) {
			t.Errorf("storage version for %s, which is not served", gr)
		}
	}
}

func TestOnlyV1alpha1Enabled(t *testing.T) {
	config := serverstorage.NewResourceConfig()
	config.EnableVersions(apisv1alpha1.SchemeGroupVersion)
	info, err := RESTStorageProvider{}.NewRESTStorage(config, &registrytest.RESTOptionsGetter{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := info.VersionedResourcesStorageMap["v1alpha2"]; ok {
		t.Error("v1alpha2 served while disabled")
	}
	if len(info.VersionedResourcesStorageMap["v1alpha1"]) != 7 {
		t.Errorf("v1alpha1 serves %v", slices.Sorted(maps.Keys(info.VersionedResourcesStorageMap["v1alpha1"])))
	}
}
