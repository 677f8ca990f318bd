// Package kubeconfig writes the kubeconfigs the project's processes hand
// out (admin kubeconfigs, the cache writer's, the ones the processes of a
// system reach each other with), so that every one of them is built the
// same way, on client-go's clientcmd API.
package kubeconfig

import (
	"errors"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// Context is one context of a kubeconfig: a cluster entry (a server) and a
// user entry (credentials), each by name. Contexts may share a cluster or a
// user by giving the same name and the same content.
type Context struct {
	// Name names the context.
	Name string
	// Cluster names the cluster entry; Server is its URL.
	Cluster, Server string
	// User names the user entry; Auth are its credentials.
	User string
	Auth clientcmdapi.AuthInfo
}

// Token returns the credentials of a bearer token.
func Token(token string) clientcmdapi.AuthInfo { return clientcmdapi.AuthInfo{Token: token} }

// Workspaces returns kcp's contexts for a server at baseURL as one user:
// per logical cluster a context and cluster named after it with the server
// <baseURL>/clusters/<cluster>, in the order given, then base with baseURL
// itself.
func Workspaces(baseURL, user string, auth clientcmdapi.AuthInfo, clusters ...logicalcluster.Name) []Context {
	contexts := make([]Context, 0, len(clusters)+1)
	for _, c := range clusters {
		contexts = append(contexts, Context{Name: c.String(), Cluster: c.String(), Server: c.Path().URL(baseURL), User: user, Auth: auth})
	}
	return append(contexts, Context{Name: "base", Cluster: "base", Server: baseURL, User: user, Auth: auth})
}

// Write writes a kubeconfig of contexts to path, every cluster trusting
// the certificates ca (PEM); the first context is the current one.
func Write(path string, ca []byte, contexts ...Context) error {
	if len(contexts) == 0 {
		return errors.New("a kubeconfig needs a context")
	}
	cfg := clientcmdapi.NewConfig()
	for _, c := range contexts {
		cfg.Clusters[c.Cluster] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthorityData: ca}
		auth := c.Auth
		cfg.AuthInfos[c.User] = &auth
		cfg.Contexts[c.Name] = &clientcmdapi.Context{Cluster: c.Cluster, AuthInfo: c.User}
	}
	cfg.CurrentContext = contexts[0].Name
	return clientcmd.WriteToFile(*cfg, path)
}
