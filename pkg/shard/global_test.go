package shard

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
)

func TestShardOtherThanRootNeedsTheRootShardAndTheCache(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{args: []string{"--shard-name=beta"}, wantErr: "--root-shard-kubeconfig is required"},
		{args: []string{"--shard-name=beta", "--root-shard-kubeconfig=/r.kubeconfig"}, wantErr: "--cache-kubeconfig is required"},
		{args: []string{"--shard-name=beta", "--root-shard-kubeconfig=/r.kubeconfig", "--cache-kubeconfig=/c.kubeconfig"}},
		// kcp's names of the flags, and kcp's front-proxy credentials, which
		// are accepted and ignored.
		{args: []string{"--shard-name=beta", "--root-shard-kubeconfig-file=/r.kubeconfig", "--cache-server-kubeconfig-file=/c.kubeconfig", "--external-logical-cluster-admin-kubeconfig=/e.kubeconfig"}},
		{args: []string{"--cache-kubeconfig=/c.kubeconfig"}},
		{args: []string{"--root-shard-kubeconfig=/r.kubeconfig"}, wantErr: "for shards other than root"},
		{args: nil},
	} {
		o := NewOptions()
		var fss cliflag.NamedFlagSets
		o.AddFlags(&fss)
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		for _, f := range fss.FlagSets {
			fs.AddFlagSet(f)
		}
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		err := validateOwn(o)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%v: %v, want no error", tc.args, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%v: %v, want an error with %q", tc.args, err, tc.wantErr)
		}
		if tc.wantErr == "" && len(tc.args) > 1 && o.RootShardKubeconfig != "/r.kubeconfig" {
			t.Errorf("%v: RootShardKubeconfig %q, want /r.kubeconfig", tc.args, o.RootShardKubeconfig)
		}
	}
}
