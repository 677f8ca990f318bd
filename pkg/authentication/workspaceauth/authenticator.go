// Package workspaceauth authenticates the tokens of the JWT issuers that a
// workspace's WorkspaceType names through its authenticationConfigurations
// (kcp's per-workspace authentication). The authenticators of a type are
// built on first use and rebuilt when the type or one of its
// WorkspaceAuthenticationConfigurations changes, so changes take effect
// without a restart.
package workspaceauth

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"
	"k8s.io/apiserver/plugin/pkg/authenticator/token/oidc"
	"k8s.io/klog/v2"

	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// Sources are what the authenticator reads, from informers.
type Sources struct {
	// TypeOf returns the WorkspaceType of a logical cluster, false when the
	// cluster or its type is unknown.
	TypeOf func(cluster logicalcluster.Name) (*tenancyv1alpha1.WorkspaceType, bool)
	// Config returns a WorkspaceAuthenticationConfiguration, nil when it
	// does not exist.
	Config func(cluster logicalcluster.Name, name string) *tenancyv1alpha1.WorkspaceAuthenticationConfiguration
}

// Authenticator authenticates a request to a logical cluster with the JWT
// issuers of the cluster's WorkspaceType. It has no opinion on requests
// without a cluster (the shard's own paths) or with another kind of token.
type Authenticator struct {
	sources   Sources
	audiences authenticator.Audiences

	mu sync.Mutex
	// lifecycle owns the issuers' discovery goroutines; nil until Run.
	lifecycle context.Context
	byType    map[typeKey]*typeAuthenticator
}

// typeKey names a WorkspaceType: its logical cluster and name.
type typeKey struct {
	cluster logicalcluster.Name
	name    string
}

// typeAuthenticator are the running authenticators of one WorkspaceType,
// built from the versions recorded in version.
type typeAuthenticator struct {
	version string
	// configs are the names of the configurations, beside the type, that
	// it was built from.
	configs sets.Set[string]
	token   authenticator.Token
	cancel  context.CancelFunc
	// done is closed once cancel has stopped the issuers.
	done <-chan struct{}
}

// New returns an Authenticator reading sources; audiences are the API
// audiences of the server. It authenticates nothing until Run.
func New(sources Sources, audiences authenticator.Audiences) *Authenticator {
	return &Authenticator{sources: sources, audiences: audiences, byType: map[typeKey]*typeAuthenticator{}}
}

// Run lets the authenticator start issuers' authenticators, which stop with
// ctx; it returns when ctx is done.
func (a *Authenticator) Run(ctx context.Context) {
	a.mu.Lock()
	a.lifecycle = ctx
	a.mu.Unlock()
	<-ctx.Done()
	a.mu.Lock()
	defer a.mu.Unlock()
	for key, t := range a.byType {
		t.cancel()
		delete(a.byType, key)
	}
}

// AuthenticateRequest authenticates the bearer token of a request to a
// logical cluster with the issuers of the cluster's type.
func (a *Authenticator) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	cluster, ok := logicalcluster.ClusterFromContext(req.Context())
	if !ok || cluster.IsWildcard() {
		return nil, false, nil
	}
	token := a.forCluster(cluster)
	if token == nil {
		return nil, false, nil
	}
	resp, ok, err := bearertoken.New(token).AuthenticateRequest(req)
	if err != nil || !ok {
		return nil, false, err
	}
	resp, err = restrict(resp, cluster)
	if err != nil {
		return nil, false, err
	}
	return resp, true, nil
}

// forCluster returns the token authenticator of a cluster's type, nil when
// the type names no usable configuration.
func (a *Authenticator) forCluster(cluster logicalcluster.Name) authenticator.Token {
	wt, ok := a.sources.TypeOf(cluster)
	if !ok {
		return nil
	}
	typeCluster, ok := logicalcluster.ObjectCluster(wt.Annotations)
	if !ok {
		return nil
	}
	key := typeKey{cluster: typeCluster, name: wt.Name}
	if len(wt.Spec.AuthenticationConfigurations) == 0 {
		a.ForgetType(typeCluster, wt.Name)
		return nil
	}
	configs, version := a.configsOf(typeCluster, wt)

	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lifecycle == nil || a.lifecycle.Err() != nil {
		return nil
	}
	if t, ok := a.byType[key]; ok {
		if t.version == version {
			return t.token
		}
		a.dropLocked(key)
	}
	t := a.build(configs, version)
	for _, ref := range wt.Spec.AuthenticationConfigurations {
		t.configs.Insert(ref.Name)
	}
	a.byType[key] = t
	return t.token
}

// ForgetType stops the authenticators of a WorkspaceType, which is gone or
// names no configuration any more: they are not kept until the server
// stops. A type that is used again is built again.
func (a *Authenticator) ForgetType(cluster logicalcluster.Name, name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.dropLocked(typeKey{cluster: cluster, name: name})
}

// ForgetConfiguration stops the authenticators of the WorkspaceTypes beside
// a WorkspaceAuthenticationConfiguration that were built from it, which is
// gone.
func (a *Authenticator) ForgetConfiguration(cluster logicalcluster.Name, name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for key, t := range a.byType {
		if key.cluster == cluster && t.configs.Has(name) {
			a.dropLocked(key)
		}
	}
}

// dropLocked stops and forgets the authenticators of a type; a.mu is held.
func (a *Authenticator) dropLocked(key typeKey) {
	if t, ok := a.byType[key]; ok {
		t.cancel()
		delete(a.byType, key)
	}
}

// configsOf returns the existing configurations a type names and a version
// that changes whenever the type's references or one of the
// configurations' specs do. A type's status changes often (its virtual
// workspace URLs): its resource version would restart the issuers'
// authenticators, which answer 401 until they have fetched the keys again.
func (a *Authenticator) configsOf(typeCluster logicalcluster.Name, wt *tenancyv1alpha1.WorkspaceType) ([]*tenancyv1alpha1.WorkspaceAuthenticationConfiguration, string) {
	var configs []*tenancyv1alpha1.WorkspaceAuthenticationConfiguration
	var version []string
	for _, ref := range wt.Spec.AuthenticationConfigurations {
		wac := a.sources.Config(typeCluster, ref.Name)
		if wac == nil {
			version = append(version, ref.Name+"=")
			continue
		}
		configs = append(configs, wac)
		version = append(version, fmt.Sprintf("%s=%s/%d", ref.Name, wac.UID, wac.Generation))
	}
	return configs, strings.Join(version, ",")
}

// build starts the JWT authenticators of configs. An issuer whose
// configuration upstream refuses is left out and logged; one still
// fetching its keys answers with an error, so its tokens get 401.
func (a *Authenticator) build(configs []*tenancyv1alpha1.WorkspaceAuthenticationConfiguration, version string) *typeAuthenticator {
	ctx, cancel := context.WithCancel(a.lifecycle)
	var tokens []authenticator.Token
	for _, wac := range configs {
		for i, jwt := range wac.Spec.JWT {
			opts := oidc.Options{JWTAuthenticator: upstreamJWT(jwt)}
			if ca := jwt.Issuer.CertificateAuthority; ca != "" {
				opts.CAContentProvider = staticCA(ca)
			}
			tok, err := oidc.New(ctx, opts)
			if err != nil {
				klog.FromContext(ctx).Info("Ignoring an invalid JWT authenticator", "configuration", wac.Name, "index", i, "err", err.Error())
				continue
			}
			tokens = append(tokens, authenticator.WrapAudienceAgnosticToken(a.audiences, tok))
		}
	}
	t := &typeAuthenticator{version: version, configs: sets.New[string](), cancel: cancel, done: ctx.Done()}
	if len(tokens) > 0 {
		t.token = tokenunion.New(tokens...)
	}
	return t
}

// staticCA is a CA bundle given in a configuration.
type staticCA string

func (c staticCA) CurrentCABundleContent() []byte { return []byte(c) }
