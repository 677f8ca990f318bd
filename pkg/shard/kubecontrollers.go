package shard

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/keyutil"

	"github.com/shardplane/shardplane/pkg/authentication/serviceaccount"
	"github.com/shardplane/shardplane/pkg/controllers/garbagecollector"
	rqcontroller "github.com/shardplane/shardplane/pkg/controllers/resourcequota"
	sacontroller "github.com/shardplane/shardplane/pkg/controllers/serviceaccount"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// startKubeControllers starts the Kubernetes controllers that every logical
// cluster needs (garbage collection, service accounts and their token
// secrets, resource quotas), each one instance
// for all clusters. Called once the wildcard informers have synced; the
// controllers' own informers sync in the background.
func (c *Server) startKubeControllers(ctx context.Context, loopback *rest.Config) error {
	// The CRD informer is the one the CRD server runs.
	crds := c.apiExtensions.crds
	saLW, cmLW := sacontroller.ListWatches(c.Informers.storage.core)
	serviceAccounts := wildcardinformer.New(saLW, &corev1.ServiceAccount{}, "wildcard-default-serviceaccounts")
	configMaps := wildcardinformer.New(cmLW, &corev1.ConfigMap{}, "wildcard-root-ca-configmaps")

	gc, err := garbagecollector.New(garbagecollector.Config{Loopback: loopback, CRDs: crds})
	if err != nil {
		return fmt.Errorf("garbage collector: %w", err)
	}
	// The quota informer runs already; the controller looks at every quota
	// once when it starts.
	quotas, err := rqcontroller.New(rqcontroller.Config{Quotas: c.Informers.resourceQuotas, CRDs: crds, Loopback: loopback})
	if err != nil {
		return fmt.Errorf("resource quota controller: %w", err)
	}
	ca := c.rootCA
	sa, err := sacontroller.New(sacontroller.Config{
		Namespaces: c.Informers.namespaces, ServiceAccounts: serviceAccounts, ConfigMaps: configMaps,
		Loopback: loopback, CABundle: ca, ClusterDeleting: c.Informers.kcp.deleting,
		Stored: c.inProcess,
	})
	if err != nil {
		return fmt.Errorf("service account controller: %w", err)
	}

	informers := []*wildcardinformer.Informer{serviceAccounts, configMaps}
	tokens, err := c.legacyTokensController(loopback, ca)
	if err != nil {
		return fmt.Errorf("service account tokens controller: %w", err)
	}
	if tokens != nil {
		informers = append(informers, tokens.secrets)
	}
	for _, inf := range informers {
		go inf.Run(ctx)
	}
	go func() {
		if err := wildcardinformer.WaitForSync(ctx, append(informers, crds)...); err != nil {
			return
		}
		go gc.Run(ctx, 2)
		// Two creates per new namespace, two namespaces per new workspace:
		// 2 workers fell behind a burst of workspaces.
		go sa.Run(ctx, 8)
		go quotas.Run(ctx, 2)
		if tokens != nil {
			go tokens.controller.Run(ctx, 2)
		}
	}()
	return nil
}

// legacyTokens is the tokens controller and its secrets informer.
type legacyTokens struct {
	controller *sacontroller.TokensController
	secrets    *wildcardinformer.Informer
}

// legacyTokensController returns the controller that fills secret-based
// service account tokens, or nil when the shard has no signing key of its
// own (an external signer) to sign them with.
func (c *Server) legacyTokensController(loopback *rest.Config, ca []byte) (*legacyTokens, error) {
	keyFile := c.Options.ControlPlane.ServiceAccountSigningKeyFile
	if keyFile == "" {
		return nil, nil
	}
	key, err := keyutil.PrivateKeyFromFile(keyFile)
	if err != nil {
		return nil, err
	}
	generator, err := serviceaccount.NewLegacyTokenGenerator(key)
	if err != nil {
		return nil, err
	}
	secrets := wildcardinformer.New(sacontroller.TokenSecretsListWatch(c.Informers.storage.core), &corev1.Secret{}, "wildcard-serviceaccount-token-secrets")
	controller, err := sacontroller.NewTokensController(sacontroller.TokensConfig{Secrets: secrets, Loopback: loopback, CABundle: ca, Generator: generator})
	if err != nil {
		return nil, err
	}
	return &legacyTokens{controller: controller, secrets: secrets}, nil
}

// serviceAccountAuthenticator makes the service account tokens the shard
// issues carry their logical cluster, and returns the authenticator that
// validates such tokens against the service account of that cluster, so a
// token works only in its own cluster (the authorizer denies it elsewhere).
// Secret-based (legacy) tokens carry and resolve their cluster the same way.
// It goes before every other authenticator.
func serviceAccountAuthenticator(o CompletedOptions) (authenticator.Request, error) {
	cp := o.ControlPlane
	if cp.ServiceAccountIssuer != nil {
		cp.ServiceAccountIssuer = serviceaccount.ClusterTokenGenerator{Delegate: cp.ServiceAccountIssuer}
	}
	sa := cp.Authentication.ServiceAccounts
	return serviceaccount.NewAuthenticator(serviceaccount.Options{
		Issuers:      sa.Issuers,
		KeyFiles:     sa.KeyFiles,
		Keys:         sa.ExternalPublicKeysGetter,
		APIAudiences: cp.Authentication.APIAudiences,
		Getter:       o.serviceAccountTokenGetter,
	})
}
