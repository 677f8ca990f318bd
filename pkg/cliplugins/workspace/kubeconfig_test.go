package workspace

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// adminKubeconfig is shaped like a shard's admin.kubeconfig.
func adminKubeconfig() *clientcmdapi.Config {
	c := clientcmdapi.NewConfig()
	c.Clusters["root"] = &clientcmdapi.Cluster{Server: "https://h/clusters/root", CertificateAuthorityData: []byte("ca")}
	c.Clusters["base"] = &clientcmdapi.Cluster{Server: "https://h", CertificateAuthorityData: []byte("ca")}
	c.AuthInfos["kcp-admin"] = &clientcmdapi.AuthInfo{Token: "t"}
	c.Contexts["root"] = &clientcmdapi.Context{Cluster: "root", AuthInfo: "kcp-admin", Namespace: "ns"}
	c.Contexts["base"] = &clientcmdapi.Context{Cluster: "base", AuthInfo: "kcp-admin"}
	c.CurrentContext = "root"
	return c
}

func TestEnterWorkspaceKeepsThePreviousContextAndLeavesOthersAlone(t *testing.T) {
	start := adminKubeconfig()
	first, err := EnterWorkspace(start, "root", "https://h/clusters/root:org")
	if err != nil {
		t.Fatal(err)
	}
	if first.CurrentContext != CurrentContextName {
		t.Errorf("current-context = %q, want %q", first.CurrentContext, CurrentContextName)
	}
	cur := first.Contexts[CurrentContextName]
	if cur.Cluster != CurrentContextName || cur.AuthInfo != "kcp-admin" || cur.Namespace != "ns" {
		t.Errorf("current context = %+v, want cluster %q with root's user and namespace", cur, CurrentContextName)
	}
	if got := first.Clusters[CurrentContextName]; got.Server != "https://h/clusters/root:org" || string(got.CertificateAuthorityData) != "ca" {
		t.Errorf("current cluster = %+v, want root's cluster at root:org", got)
	}
	if prev := first.Contexts[PreviousContextName]; prev.Cluster != "root" {
		t.Errorf("previous context uses cluster %q, want root", prev.Cluster)
	}
	for _, name := range []string{"root", "base"} {
		if !equality.Semantic.DeepEqual(first.Contexts[name], start.Contexts[name]) || !equality.Semantic.DeepEqual(first.Clusters[name], start.Clusters[name]) {
			t.Errorf("context or cluster %q changed", name)
		}
	}
	if start.CurrentContext != "root" || len(start.Contexts) != 2 {
		t.Errorf("EnterWorkspace modified its input")
	}

	// From the plugin's own context, the old cluster entry moves to previous.
	second, err := EnterWorkspace(first, CurrentContextName, "https://h/clusters/root:org:team")
	if err != nil {
		t.Fatal(err)
	}
	if got := second.Clusters[CurrentContextName].Server; got != "https://h/clusters/root:org:team" {
		t.Errorf("current server = %q", got)
	}
	if prev := second.Contexts[PreviousContextName]; prev.Cluster != PreviousContextName {
		t.Errorf("previous context uses cluster %q, want %q", prev.Cluster, PreviousContextName)
	}
	if got := second.Clusters[PreviousContextName].Server; got != "https://h/clusters/root:org" {
		t.Errorf("previous server = %q, want root:org", got)
	}
}

func TestSwapWithPreviousGoesBackAndForth(t *testing.T) {
	first, err := EnterWorkspace(adminKubeconfig(), "root", "https://h/clusters/root:org")
	if err != nil {
		t.Fatal(err)
	}
	second, err := EnterWorkspace(first, CurrentContextName, "https://h/clusters/root:org:team")
	if err != nil {
		t.Fatal(err)
	}
	servers := func(c *clientcmdapi.Config) (string, string) {
		cur, err := ServerOf(c, CurrentContextName)
		if err != nil {
			t.Fatal(err)
		}
		prev, err := ServerOf(c, PreviousContextName)
		if err != nil {
			t.Fatal(err)
		}
		return cur, prev
	}
	back, err := SwapWithPrevious(second, CurrentContextName)
	if err != nil {
		t.Fatal(err)
	}
	if cur, prev := servers(back); cur != "https://h/clusters/root:org" || prev != "https://h/clusters/root:org:team" {
		t.Errorf("after -: current %q previous %q", cur, prev)
	}
	forth, err := SwapWithPrevious(back, CurrentContextName)
	if err != nil {
		t.Fatal(err)
	}
	if cur, prev := servers(forth); cur != "https://h/clusters/root:org:team" || prev != "https://h/clusters/root:org" {
		t.Errorf("after - -: current %q previous %q", cur, prev)
	}

	// Back to a context that is not the plugin's: root's own cluster.
	toRoot, err := SwapWithPrevious(first, CurrentContextName)
	if err != nil {
		t.Fatal(err)
	}
	if cur, prev := servers(toRoot); cur != "https://h/clusters/root" || prev != "https://h/clusters/root:org" {
		t.Errorf("back to root: current %q previous %q", cur, prev)
	}
	if toRoot.Contexts[CurrentContextName].Cluster != "root" {
		t.Errorf("current context should use root's cluster entry, uses %q", toRoot.Contexts[CurrentContextName].Cluster)
	}
}

func TestKubeconfigErrorsNameWhatIsMissing(t *testing.T) {
	if _, err := SwapWithPrevious(adminKubeconfig(), "root"); !errors.Is(err, errNoPrevious) {
		t.Errorf("swap without previous: %v, want %v", err, errNoPrevious)
	}
	if _, err := EnterWorkspace(adminKubeconfig(), "nope", "https://h/clusters/root:x"); err == nil || err.Error() != `current context "nope" not found in kubeconfig` {
		t.Errorf("unknown context: %v", err)
	}
	c := adminKubeconfig()
	c.Contexts["dangling"] = &clientcmdapi.Context{Cluster: "gone"}
	if _, err := EnterWorkspace(c, "dangling", "https://h/clusters/root:x"); err == nil || err.Error() != `cluster "gone" of context "dangling" not found in kubeconfig` {
		t.Errorf("dangling context: %v", err)
	}
}
