package version

import (
	"strings"
	"testing"

	basecompatibility "k8s.io/component-base/compatibility"
)

func TestUnversionedBuildReportsTheKubernetesReleaseItBuildsOn(t *testing.T) {
	v := Project(basecompatibility.NewEffectiveVersionFromString("1.37.1", "", ""))
	info := v.Info()
	if info == nil {
		t.Fatal("no version info")
	}
	if strings.HasPrefix(info.GitVersion, "v0.0.0") {
		t.Errorf("GitVersion %q is the unset default", info.GitVersion)
	}
	if !strings.HasSuffix(info.GitVersion, "+shardplane") || !strings.HasPrefix(info.GitVersion, "v1.") {
		t.Errorf("GitVersion %q, want v1.x.y+shardplane", info.GitVersion)
	}
}
