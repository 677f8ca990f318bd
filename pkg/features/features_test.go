package features

import (
	"testing"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
)

func TestWorkspaceAuthenticationIsAlphaAndOffUnlessSet(t *testing.T) {
	spec, ok := utilfeature.DefaultMutableFeatureGate.GetAll()[WorkspaceAuthentication]
	if !ok {
		t.Fatal("WorkspaceAuthentication is not registered")
	}
	if spec.Default || spec.PreRelease != featuregate.Alpha {
		t.Errorf("spec %+v, want alpha and off, as kcp's", spec)
	}
	if Enabled(WorkspaceAuthentication) {
		t.Fatal("enabled without --feature-gates")
	}
	if err := utilfeature.DefaultMutableFeatureGate.Set(string(WorkspaceAuthentication) + "=true"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = utilfeature.DefaultMutableFeatureGate.Set(string(WorkspaceAuthentication) + "=false") })
	if !Enabled(WorkspaceAuthentication) {
		t.Error("not enabled by --feature-gates=WorkspaceAuthentication=true")
	}
}

func TestWorkspaceMountsIsAlphaAndOffUnlessSet(t *testing.T) {
	spec, ok := utilfeature.DefaultMutableFeatureGate.GetAll()[WorkspaceMounts]
	if !ok {
		t.Fatal("WorkspaceMounts is not registered")
	}
	if spec.Default || spec.PreRelease != featuregate.Alpha || Enabled(WorkspaceMounts) {
		t.Errorf("spec %+v, enabled %t: want alpha and off, as kcp's", spec, Enabled(WorkspaceMounts))
	}
	if got := EnableFlag(WorkspaceAuthentication, WorkspaceMounts); got != "--feature-gates=WorkspaceAuthentication=true,WorkspaceMounts=true" {
		t.Errorf("EnableFlag = %q", got)
	}
}

func TestCacheAPIsIsAlphaAndOffUnlessSet(t *testing.T) {
	spec, ok := utilfeature.DefaultMutableFeatureGate.GetAll()[CacheAPIs]
	if !ok {
		t.Fatal("CacheAPIs is not registered")
	}
	if spec.Default || spec.PreRelease != featuregate.Alpha || Enabled(CacheAPIs) {
		t.Errorf("spec %+v, enabled %t: want alpha and off, as kcp's", spec, Enabled(CacheAPIs))
	}
}
