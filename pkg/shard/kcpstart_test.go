package shard

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
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
	f := &kcpAwareFeatureGates{Value: upstream, warnings: &warnings}
	if err := f.Set("KubeThing=true,WorkspaceMounts=true,kube:CacheAPIs=false"); err != nil {
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
}
