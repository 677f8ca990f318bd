package shard

import (
	"runtime/debug"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"

	"github.com/shardplane/shardplane/pkg/storage/embeddedetcd"
)

func TestBatteriesFollowKCPSemantics(t *testing.T) {
	for _, tc := range []struct {
		flag    []string
		want    []string
		wantErr string
	}{
		{flag: defaultBatteries, want: []string{"admin", "workspace-types"}},
		{flag: []string{"admin"}, want: []string{"admin"}},
		{flag: []string{"+user"}, want: []string{"admin", "user", "workspace-types"}},
		{flag: []string{"-admin"}, want: []string{"workspace-types"}},
		{flag: []string{"-workspace-types", "+metrics-viewer"}, want: []string{"admin", "metrics-viewer"}},
		{flag: []string{""}, want: []string{}},
		{flag: []string{"jetpack"}, wantErr: `unknown battery "jetpack"`},
		{flag: []string{"-admin", "+user"}, wantErr: `requires battery "admin"`},
	} {
		o := kcpStartOptions{Batteries: tc.flag}
		got, err := o.batteries()
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: got %v, want error %q", tc.flag, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !got.Equal(sets.New(tc.want...)) {
			t.Errorf("%q: got %v %v, want %v", tc.flag, sets.List(got), err, tc.want)
		}
	}
}

// recordingValue records what reaches the upstream flag.
type recordingValue struct{ set []string }

func (r *recordingValue) String() string     { return strings.Join(r.set, ",") }
func (r *recordingValue) Type() string       { return "test" }
func (r *recordingValue) Set(v string) error { r.set = append(r.set, v); return nil }

func TestFeatureGatesPassKubernetesGatesAndWarnAboutKCPGates(t *testing.T) {
	upstream := &recordingValue{}
	var warnings []string
	f := &kcpAwareFeatureGates{Value: upstream, warnings: &warnings, set: sets.New[string]()}
	if err := f.Set("KubeThing=true,EnableDeprecatedAPIExportVirtualWorkspacesUrls=true,kube:KcpNativeGarbageCollector=false"); err != nil {
		t.Fatalf("Set: %v", err)
	}
	if err := f.Set("LogicalClusterMigration=true"); err != nil {
		t.Fatalf("Set: %v", err)
	}
	if got := strings.Join(upstream.set, ";"); got != "KubeThing=true" {
		t.Errorf("upstream flag got %q, want only the Kubernetes gate", got)
	}
	if len(warnings) != 3 {
		t.Errorf("warnings = %q, want one per kcp gate", warnings)
	}
	if want := sets.New("KubeThing", "EnableDeprecatedAPIExportVirtualWorkspacesUrls", "KcpNativeGarbageCollector", "LogicalClusterMigration"); !f.set.Equal(want) {
		t.Errorf("recorded gates %v, want %v", sets.List(f.set), sets.List(want))
	}
}

func TestConstructingTheCommandChangesNoProcessSetting(t *testing.T) {
	before := utilfeature.DefaultFeatureGate.Enabled("ListFromCacheSnapshot")
	gc := debug.SetGCPercent(100)
	debug.SetGCPercent(gc)
	NewCommand()
	NewCommand()
	if got := utilfeature.DefaultFeatureGate.Enabled("ListFromCacheSnapshot"); got != before {
		t.Errorf("ListFromCacheSnapshot changed from %t to %t by NewCommand", before, got)
	}
	if now := debug.SetGCPercent(gc); now != gc {
		t.Errorf("GC percent changed from %d to %d by NewCommand", gc, now)
	}
}

func TestProcessDefaultsLeaveGatesTheCommandLineSet(t *testing.T) {
	t.Setenv("GOGC", "100") // keep the test process's GC percent
	gates := processDefaultOffGates
	o := NewOptions()
	o.kcpStart.featureGatesSet = sets.New(gates...)
	before := map[string]bool{}
	for _, g := range gates {
		before[g] = utilfeature.DefaultFeatureGate.Enabled(featuregate.Feature(g))
	}
	if err := o.applyProcessDefaults(); err != nil {
		t.Fatal(err)
	}
	for _, g := range gates {
		if got := utilfeature.DefaultFeatureGate.Enabled(featuregate.Feature(g)); got != before[g] {
			t.Errorf("%s changed from %t to %t although the command line set it", g, before[g], got)
		}
	}
}

func TestProcessDefaultsTurnOffListSnapshotsNativeHistogramsAndSizeEstimates(t *testing.T) {
	t.Setenv("GOGC", "100") // keep the test process's GC percent
	gates := map[string]bool{}
	for _, g := range []string{"ListFromCacheSnapshot", "NativeHistograms", "SizeBasedListCostEstimate"} {
		gates[g] = utilfeature.DefaultFeatureGate.Enabled(featuregate.Feature(g))
	}
	t.Cleanup(func() {
		if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(gates); err != nil {
			t.Error(err)
		}
	})
	if err := NewOptions().applyProcessDefaults(); err != nil {
		t.Fatal(err)
	}
	for g := range gates {
		if utilfeature.DefaultFeatureGate.Enabled(featuregate.Feature(g)) {
			t.Errorf("%s is on after the shard's process defaults; want off unless --feature-gates names it", g)
		}
	}
}

func TestFeatureGatesWarnAboutLockedKubernetesGates(t *testing.T) {
	gates := featuregate.NewFeatureGate()
	if err := gates.Add(map[featuregate.Feature]featuregate.FeatureSpec{
		"LockedOn": {Default: true, LockToDefault: true, PreRelease: featuregate.GA},
		"Open":     {Default: false, PreRelease: featuregate.Alpha},
	}); err != nil {
		t.Fatal(err)
	}
	upstream := &recordingValue{}
	var warnings []string
	f := &kcpAwareFeatureGates{Value: upstream, warnings: &warnings, set: sets.New[string](), gates: gates}
	if err := f.Set("LockedOn=false,Open=true,kube:LockedOn=true"); err != nil {
		t.Fatalf("Set: %v", err)
	}
	if got := strings.Join(upstream.set, ";"); got != "Open=true,kube:LockedOn=true" {
		t.Errorf("upstream flag got %q, want the open gate and the locked one at its locked value", got)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "LockedOn is locked to true") {
		t.Errorf("warnings = %q, want one about LockedOn", warnings)
	}
}

func TestKubeconfigPathIsBelowTheRootDirectoryUnlessAbsolute(t *testing.T) {
	o := NewOptions()
	o.RootDirectory = "/data/kcp/main"
	for flag, want := range map[string]string{
		"":                  "/data/kcp/main/admin.kubeconfig",
		"admin.kubeconfig":  "/data/kcp/main/admin.kubeconfig",
		"sub/x.kubeconfig":  "/data/kcp/main/sub/x.kubeconfig",
		"/elsewhere/k.yaml": "/elsewhere/k.yaml",
	} {
		o.kcpStart.KubeconfigPath = flag
		if got := o.AdminKubeconfigPath(); got != want {
			t.Errorf("--kubeconfig-path=%q: %s, want %s", flag, got, want)
		}
	}
}

func TestEmbeddedEtcdOptionsTakeKCPsFlags(t *testing.T) {
	o := NewOptions()
	o.kcpStart.EmbeddedEtcd = embeddedetcd.TuningFlags{WALSizeBytes: 5000, QuotaBackendBytes: 1 << 30, ListenMetricsURLs: []string{"http://127.0.0.1:9379"}, ForceNewCluster: true}
	e, err := o.embeddedEtcdOptions()
	if err != nil {
		t.Fatal(err)
	}
	if e.WALSegmentSizeBytes != 5000 || e.QuotaBackendBytes != 1<<30 || !e.ForceNewCluster || len(e.ListenMetricsURLs) != 1 || e.ListenMetricsURLs[0].Host != "127.0.0.1:9379" {
		t.Errorf("embedded etcd options %+v do not carry the flags", e)
	}
	o.kcpStart.EmbeddedEtcd.ListenMetricsURLs = []string{"127.0.0.1:9379"}
	if _, err := o.embeddedEtcdOptions(); err == nil || !strings.Contains(err.Error(), "--embedded-etcd-listen-metrics-urls") {
		t.Errorf("a metrics URL without scheme: %v, want an error naming the flag", err)
	}
}
