package shard

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/keyutil"

	"github.com/shardplane/shardplane/pkg/authentication/serviceaccount"
	apibindingcontroller "github.com/shardplane/shardplane/pkg/controllers/apibinding"
	"github.com/shardplane/shardplane/pkg/controllers/garbagecollector"
	rqcontroller "github.com/shardplane/shardplane/pkg/controllers/resourcequota"
	sacontroller "github.com/shardplane/shardplane/pkg/controllers/serviceaccount"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// The Kubernetes controllers every logical cluster needs (garbage
// collection, resource quotas, service accounts and their token secrets),
// each one instance for all clusters. They are built once the wildcard
// informers have synced and the shard serves (they discover its
// resources); their own informers sync in the background.

// installGarbageCollector installs the garbage collector and the
// controller of claimed objects' labels its watches feed: both look at
// objects of every resource, which the shard watches once.
func (c *Server) installGarbageCollector(gs *genericapiserver.GenericAPIServer, cl controllerClients) error {
	// The CRD informer is the one the CRD server runs.
	crds, apiBindings := c.apiExtensions.crds, c.Informers.kcp.apiBindings
	return c.addController(gs, "shardplane-garbage-collector", func(ctx context.Context) error {
		claimed := apibindingcontroller.NewClaimedObjects(apibindingcontroller.ClaimedObjectsConfig{
			Bindings: c.Informers.kcp.bindingsOf, Relabel: cl.relabeler.RelabelObject,
		})
		observe := claimed.Observe
		if mounts := c.workspaceMounts; mounts != nil {
			// Mount objects are of any resource: the collector's watches
			// see their changes.
			observe = func(resource schema.GroupVersionResource, obj metav1.Object) {
				claimed.Observe(resource, obj)
				mounts.Observe(resource, obj)
			}
		}
		gc, err := garbagecollector.New(garbagecollector.Config{
			Loopback: cl.loopback, CRDs: crds, Bound: c.apiExtensions.bound, APIBindings: apiBindings,
			Observe: observe,
		})
		if err != nil {
			return fmt.Errorf("garbage collector: %w", err)
		}
		// Observe judges by the bindings: the watches start once they are listed.
		go runWhenSynced(ctx, gc, 2, crds, apiBindings)
		go claimed.Run(ctx, 2)
		return nil
	})
}

// installResourceQuotaController installs the controller of quota usage.
func (c *Server) installResourceQuotaController(gs *genericapiserver.GenericAPIServer, cl controllerClients) error {
	crds := c.apiExtensions.crds
	return c.addController(gs, "shardplane-resourcequota-controller", func(ctx context.Context) error {
		// The quota informer runs already; the controller looks at every
		// quota once when it starts.
		quotas, err := rqcontroller.New(rqcontroller.Config{Quotas: c.Informers.resourceQuotas, CRDs: crds, Loopback: cl.loopback})
		if err != nil {
			return fmt.Errorf("resource quota controller: %w", err)
		}
		go runWhenSynced(ctx, quotas, 2, crds)
		return nil
	})
}

// installServiceAccountControllers installs the controller of every
// namespace's service account and root CA config map and, with a signing
// key, that of secret-based tokens.
func (c *Server) installServiceAccountControllers(gs *genericapiserver.GenericAPIServer, cl controllerClients) error {
	return c.addController(gs, "shardplane-serviceaccount-controllers", func(ctx context.Context) error {
		saLW, cmLW := sacontroller.ListWatches(c.Informers.storage.core)
		serviceAccounts := wildcardinformer.New(saLW, &corev1.ServiceAccount{}, "wildcard-default-serviceaccounts")
		configMaps := wildcardinformer.New(cmLW, &corev1.ConfigMap{}, "wildcard-root-ca-configmaps")
		sa, err := sacontroller.New(sacontroller.Config{
			Namespaces: c.Informers.namespaces, ServiceAccounts: serviceAccounts, ConfigMaps: configMaps,
			Loopback: cl.loopback, CABundle: c.rootCA, ClusterDeleting: c.Informers.kcp.deleting,
			Stored: c.inProcess,
		})
		if err != nil {
			return fmt.Errorf("service account controller: %w", err)
		}
		tokens, err := c.legacyTokensController(cl.loopback, c.rootCA)
		if err != nil {
			return fmt.Errorf("service account tokens controller: %w", err)
		}
		for _, inf := range []*wildcardinformer.Informer{serviceAccounts, configMaps} {
			go inf.Run(ctx)
		}
		// Two creates per new namespace, two namespaces per new workspace:
		// 2 workers fell behind a burst of workspaces.
		go runWhenSynced(ctx, sa, 8, serviceAccounts, configMaps)
		if tokens != nil {
			go tokens.secrets.Run(ctx)
			go runWhenSynced(ctx, tokens.controller, 2, tokens.secrets)
		}
		return nil
	})
}

// runWhenSynced runs controller with workers once informers have listed.
func runWhenSynced(ctx context.Context, controller runner, workers int, informers ...*wildcardinformer.Informer) {
	if wildcardinformer.WaitForSync(ctx, informers...) == nil {
		controller.Run(ctx, workers)
	}
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
	keyFile := c.Options.kcpStart.ServiceAccountPrivateKeyFile
	if keyFile == "" {
		keyFile = c.Options.ControlPlane.ServiceAccountSigningKeyFile
	}
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
