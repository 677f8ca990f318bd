package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestInstallRegistersExternalAndInternalVersions(t *testing.T) {
	scheme := newScheme(t)
	for _, kind := range []string{"LogicalCluster", "LogicalClusterList", "Shard", "ShardList"} {
		if !scheme.Recognizes(SchemeGroupVersion.WithKind(kind)) {
			t.Errorf("%s not registered as %s", kind, SchemeGroupVersion)
		}
		if !scheme.Recognizes(InternalGroupVersion.WithKind(kind)) {
			t.Errorf("%s not registered as %s", kind, InternalGroupVersion)
		}
	}
	if !scheme.Recognizes(SchemeGroupVersion.WithKind("ListOptions")) {
		t.Errorf("metav1 options are not registered for %s", SchemeGroupVersion)
	}
	if got := scheme.PrioritizedVersionsForGroup(GroupName); len(got) != 1 || got[0] != SchemeGroupVersion {
		t.Errorf("prioritized versions = %v, want [%v]", got, SchemeGroupVersion)
	}
}

func TestConvertingBetweenVersionsIsACopy(t *testing.T) {
	scheme := newScheme(t)
	in := &LogicalCluster{ObjectMeta: metav1.ObjectMeta{Name: LogicalClusterName}}

	internal, err := scheme.ConvertToVersion(in, InternalGroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	lc, ok := internal.(*LogicalCluster)
	if !ok || lc.Name != LogicalClusterName {
		t.Fatalf("internal = %#v", internal)
	}

	external, err := scheme.ConvertToVersion(lc, SchemeGroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	if got := external.GetObjectKind().GroupVersionKind(); got != SchemeGroupVersion.WithKind("LogicalCluster") {
		t.Errorf("external kind = %v", got)
	}
}

func TestKindAndResourceAreGroupQualified(t *testing.T) {
	if got := Kind("Shard").String(); got != "Shard.core.kcp.io" {
		t.Errorf("Kind = %s", got)
	}
	if got := Resource("logicalclusters").String(); got != "logicalclusters.core.kcp.io" {
		t.Errorf("Resource = %s", got)
	}
}
