package shard

import (
	"context"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// fixedAuthorizer allows what allow says, by user name and verb.
type fixedAuthorizer func(a authorizer.Attributes) bool

func (f fixedAuthorizer) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if f(a) {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func (f fixedAuthorizer) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(f.Authorize(ctx, a))
}

func (fixedAuthorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", nil
}

func TestChecksInWorkspacesOfOtherShardsUseTheirReplicatedRBAC(t *testing.T) {
	chain := fixedAuthorizer(func(a authorizer.Attributes) bool { return a.GetUser().GetName() == "chain-user" })
	// The replicated RBAC: alice may enter root and use types; bob may use
	// types but not enter root.
	rbac := fixedAuthorizer(func(a authorizer.Attributes) bool {
		switch a.GetUser().GetName() {
		case "alice":
			return true
		case "bob":
			return a.GetVerb() == "use"
		}
		return false
	})
	checks := remoteChecks{chain: chain, rbac: rbac, hosted: func(c logicalcluster.Name) bool { return c == "local" }}
	use := func(name string, groups ...string) authorizer.Attributes {
		return authorizer.AttributesRecord{User: &user.DefaultInfo{Name: name, Groups: groups}, Verb: "use", Resource: "workspacetypes", ResourceRequest: true}
	}
	for _, tc := range []struct {
		cluster logicalcluster.Name
		attr    authorizer.Attributes
		want    authorizer.Decision
	}{
		{"root", use("alice"), authorizer.DecisionAllow},
		{"root", use("bob"), authorizer.DecisionDeny}, // no access to root
		{"root", use("shard-admin", user.SystemPrivilegedGroup), authorizer.DecisionAllow},
		{"root", use("kcp-admin", "system:kcp:admin"), authorizer.DecisionAllow},
		{"root", use("chain-user"), authorizer.DecisionDeny}, // root is not judged by the chain here
		{"local", use("chain-user"), authorizer.DecisionAllow},
		{"local", use("alice"), authorizer.DecisionNoOpinion}, // hosted clusters: the chain alone
		{"other", use("alice"), authorizer.DecisionAllow},     // any cluster another shard hosts: its RBAC
		{"other", use("bob"), authorizer.DecisionDeny},
		{"system:admin", use("alice"), authorizer.DecisionDeny}, // system clusters are nobody's to use
	} {
		got, _, _ := checks.Authorize(logicalcluster.WithCluster(context.Background(), tc.cluster), tc.attr)
		if got != tc.want {
			t.Errorf("%s by %s: %v, want %v", tc.cluster, tc.attr.GetUser().GetName(), got, tc.want)
		}
	}
}

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
