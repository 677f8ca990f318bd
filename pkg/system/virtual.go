package system

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/shardplane/shardplane/pkg/identities"
	"github.com/shardplane/shardplane/pkg/kubeconfig"
	"github.com/shardplane/shardplane/pkg/rootdir"
	"github.com/shardplane/shardplane/pkg/virtual/viewurl"
)

// externalAdminKubeconfig reaches every workspace through the front-proxy
// as kcp-admin: the virtual workspace servers authorize their callers
// there with SubjectAccessReviews.
const externalAdminKubeconfig = "external-admin.kubeconfig"

// virtualWorkspacesName names the virtual-workspaces process of a shard.
func virtualWorkspacesName(shard string) string { return "virtual-workspaces-" + shard }

// VirtualWorkspacesURL is the URL of a shard's virtual workspace server:
// its own process, or the shard when it serves them in-process.
func (s *System) VirtualWorkspacesURL(shard string) string {
	if s.o.VirtualWorkspacesBinary == "" {
		return s.ShardURL(shard)
	}
	return fmt.Sprintf("https://127.0.0.1:%d", s.ports.VirtualWorkspaces[shard])
}

// forwardClientCert is the shard's client certificate (system:masters,
// signed by the shard's client CA, which its virtual workspace server
// trusts) that it forwards /services/ with.
const forwardClientCert = "virtual-workspaces-forward-client"

// prepareVirtualWorkspaces creates the serving certificates of the
// virtual workspace servers and returns them, for the front-proxy to trust,
// and each shard's certificate to forward to its server with.
func (s *System) prepareVirtualWorkspaces() ([]byte, error) {
	if s.o.VirtualWorkspacesBinary == "" {
		return nil, nil
	}
	var bundle []byte
	for i := 0; i < s.o.Shards; i++ {
		dir, err := rootdir.Open(s.dir.Path(virtualWorkspacesName(ShardName(i))))
		if err != nil {
			return nil, err
		}
		certFile, _, err := dir.EnsureServingCert(loopbackServingNames)
		if err != nil {
			return nil, err
		}
		shardDir, err := rootdir.Open(s.dir.Path(ShardName(i)))
		if err != nil {
			return nil, err
		}
		if _, err := shardDir.EnsureClientCA(); err != nil {
			return nil, err
		}
		if _, _, err := shardDir.EnsureClientCert(forwardClientCert, rootdir.ClientCAName, identities.ShardForwarderUser, user.SystemPrivilegedGroup); err != nil {
			return nil, err
		}
		pem, err := os.ReadFile(certFile)
		if err != nil {
			return nil, err
		}
		bundle = append(bundle, pem...)
	}
	return bundle, nil
}

// viewArgs are the flags of a shard about its views: published through
// the front-proxy, which maps /shards/<shard>/ to them, and, served by a
// server of their own, forwarded there with the shard's certificate.
func (s *System) viewArgs(shard string) []string {
	args := []string{"--shard-virtual-workspace-url=" + s.URL() + viewurl.ShardsPrefix + shard}
	if s.o.VirtualWorkspacesBinary == "" {
		return args
	}
	vwDir := virtualWorkspacesName(shard)
	return append(args,
		"--run-virtual-workspaces=false",
		"--shard-virtual-workspace-forward-url="+s.VirtualWorkspacesURL(shard),
		"--shard-virtual-workspace-ca-file="+s.dir.Path(filepath.Join(vwDir, rootdir.ServingCertPairName+".crt")),
		"--shard-client-cert-file="+s.dir.Path(filepath.Join(shard, forwardClientCert+".crt")),
		"--shard-client-key-file="+s.dir.Path(filepath.Join(shard, forwardClientCert+".key")),
	)
}

// virtualWorkspacesMapping routes the front-proxy's /services/ to the root
// shard's virtual workspace server and /shards/<shard>/ to each shard's,
// which is how status fields name them (viewurl.ShardServerURL).
func (s *System) virtualWorkspacesMapping() string {
	route := func(path, backend string) string {
		return fmt.Sprintf(`- path: %s
  backend: %s
  backend_server_ca: %s
  proxy_client_cert: %s
  proxy_client_key: %s
`, path, backend, s.dir.Path("shards-ca.crt"), s.dir.Path(proxyClientCert+".crt"), s.dir.Path(proxyClientCert+".key"))
	}
	out := route(viewurl.ServicesPrefix, s.VirtualWorkspacesURL(ShardName(0)))
	for i := 0; i < s.o.Shards; i++ {
		out += route(viewurl.ShardsPrefix+ShardName(i)+"/", s.VirtualWorkspacesURL(ShardName(i)))
	}
	return out
}

// writeVirtualWorkspacesKubeconfigs writes, for each virtual workspace
// server, the privileged kubeconfig of its shard, and the front-proxy
// kubeconfig they authorize callers with.
func (s *System) writeVirtualWorkspacesKubeconfigs(shardsCA []byte) error {
	if s.o.VirtualWorkspacesBinary == "" {
		return nil
	}
	write := func(file, server string, ca []byte, token string) error {
		return kubeconfig.Write(s.dir.Path(file), ca, kubeconfig.Context{Name: "default", Cluster: "server", Server: server, User: "user", Auth: kubeconfig.Token(token)})
	}
	for i := 0; i < s.o.Shards; i++ {
		name := ShardName(i)
		if err := write(virtualWorkspacesName(name)+".kubeconfig", s.ShardURL(name), shardsCA, s.tokens.SystemAdmin); err != nil {
			return err
		}
	}
	proxyCA, err := os.ReadFile(s.proxyServingCert())
	if err != nil {
		return err
	}
	return write(externalAdminKubeconfig, s.URL(), proxyCA, s.tokens.KCPAdmin)
}

// startVirtualWorkspaces starts the virtual-workspaces process of every
// shard and waits until they are ready.
func (s *System) startVirtualWorkspaces(ctx context.Context) error {
	if s.o.VirtualWorkspacesBinary == "" {
		return nil
	}
	for i := 0; i < s.o.Shards; i++ {
		name := ShardName(i)
		if err := s.start(ctx, virtualWorkspacesName(name), s.o.VirtualWorkspacesBinary, s.virtualWorkspacesArgs(name)); err != nil {
			return err
		}
	}
	for i := 0; i < s.o.Shards; i++ {
		name := virtualWorkspacesName(ShardName(i))
		cert := s.dir.Path(filepath.Join(name, rootdir.ServingCertPairName+".crt"))
		if err := s.waitReady(ctx, name, s.VirtualWorkspacesURL(ShardName(i)), cert, s.tokens.SystemAdmin); err != nil {
			return err
		}
	}
	return nil
}

func (s *System) virtualWorkspacesArgs(shard string) []string {
	name := virtualWorkspacesName(shard)
	return []string{
		"--root-directory=" + s.dir.Path(name),
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(s.ports.VirtualWorkspaces[shard]),
		"--tls-cert-file=" + s.dir.Path(filepath.Join(name, rootdir.ServingCertPairName+".crt")),
		"--tls-private-key-file=" + s.dir.Path(filepath.Join(name, rootdir.ServingCertPairName+".key")),
		"--kubeconfig=" + s.dir.Path(name+".kubeconfig"),
		"--external-logical-cluster-admin-kubeconfig=" + s.dir.Path(externalAdminKubeconfig),
		"--token-auth-file=" + s.dir.Path("shard-tokens.csv"),
		"--client-ca-file=" + s.dir.Path(filepath.Join(shard, rootdir.ClientCACertFile)),
		"--requestheader-client-ca-file=" + s.dir.Path(proxyClientCA+".crt"),
		"--requestheader-allowed-names=" + identities.FrontProxyUser,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		// The replication view reads the copies where the shard writes them.
		"--cache-kubeconfig=" + s.cacheKubeconfig(),
	}
}

// DefaultVirtualWorkspacesBinary is the virtual-workspaces program in dir
// when there is one; empty (the shards serve the views in-process)
// otherwise.
func DefaultVirtualWorkspacesBinary(dir string) string {
	p := filepath.Join(dir, "virtual-workspaces")
	if info, err := os.Stat(p); err == nil && !info.IsDir() {
		return p
	}
	return ""
}
