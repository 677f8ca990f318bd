package shard

import (
	"fmt"

	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/identities"
	"github.com/shardplane/shardplane/pkg/kcpclient"
)

// shardClient returns a client for a shard's baseURL that acts as
// system:kcp:logical-cluster-admin. Clients are kept per base URL: the
// scheduler asks for one on every workspace it places or deletes.
func (c *Server) shardClient(shard *corev1alpha1.Shard) (*kcpclient.Client, error) {
	if client, ok := c.shardClients.Load(shard.Spec.BaseURL); ok {
		return client.(*kcpclient.Client), nil
	}
	cfg, err := c.logicalClusterAdminConfig(shard.Name)
	if err != nil {
		return nil, err
	}
	cfg.Host = shard.Spec.BaseURL
	client, err := kcpclient.New(cfg)
	if err != nil {
		return nil, err
	}
	actual, _ := c.shardClients.LoadOrStore(shard.Spec.BaseURL, client)
	return actual.(*kcpclient.Client), nil
}

// logicalClusterAdminConfig returns the credentials for a shard:
// --logical-cluster-admin-kubeconfig, or, for this shard only, its own
// token and serving CA. Another shard accepts only credentials it was given
// (a token or client certificate in group system:kcp:logical-cluster-admin),
// never this shard's own token.
func (c *Server) logicalClusterAdminConfig(shardName string) (*restclient.Config, error) {
	if path := c.Options.LogicalClusterAdminKubeconfig; path != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("--logical-cluster-admin-kubeconfig: %w", err)
		}
		cfg.QPS = -1
		return cfg, nil
	}
	if shardName != c.Options.ShardName {
		return nil, fmt.Errorf("shard %s is another shard: creating logical clusters there needs --logical-cluster-admin-kubeconfig with credentials in group %s that it accepts",
			shardName, identities.LogicalClusterAdminGroup)
	}
	ca, err := c.servingCA()
	if err != nil {
		return nil, err
	}
	return &restclient.Config{
		BearerToken:     c.Options.tokens.LogicalClusterAdmin,
		TLSClientConfig: restclient.TLSClientConfig{CAData: ca},
		QPS:             -1,
	}, nil
}
