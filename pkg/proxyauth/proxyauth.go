// Package proxyauth authenticates requests a front-proxy forwards: the user
// in request headers, trusted because the connection presents a client
// certificate of the request-header CA.
//
// It is upstream's request-header authenticator with one difference: the
// certificate chain is verified once per connection, not once per request.
// Upstream verifies the chain (signatures included) on every request, CPU
// spent again on every proxied request, although a front-proxy sends every
// request of every user over a few long-lived connections.
package proxyauth

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/authentication/request/union"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/utils/lru"
)

// verifiedFor bounds how long a verified chain is trusted without being
// verified again; a certificate's own expiry bounds it too.
const verifiedFor = 5 * time.Minute

// cacheSize bounds the connections whose verification is remembered.
const cacheSize = 1024

// New returns the request-header authenticator of config with verification
// cached per client certificate; nil when config is nil.
func New(config *authenticatorfactory.RequestHeaderConfig) authenticator.Request {
	if config == nil || config.CAContentProvider == nil {
		return nil
	}
	return &Authenticator{
		verifyOptions:      config.CAContentProvider.VerifyOptions,
		allowedClientNames: config.AllowedClientNames,
		headers: headerrequest.NewDynamic(
			config.UsernameHeaders, config.UIDHeaders, config.GroupHeaders, config.ExtraHeaderPrefixes),
		verified: lru.New(cacheSize),
		now:      time.Now,
	}
}

// Prepend returns authn with the request-header authenticator of config
// (verification cached) in front: a request that authenticator accepts
// skips upstream's, which verifies the chain again on every request. It
// returns authn alone when config is nil.
func Prepend(config *authenticatorfactory.RequestHeaderConfig, audiences authenticator.Audiences, authn authenticator.Request) authenticator.Request {
	cached := New(config)
	if cached == nil {
		return authn
	}
	// As upstream: request-header users are valid for every audience.
	return union.New(authenticator.WrapAudienceAgnosticRequest(audiences, cached), authn)
}

// Authenticator verifies the client certificate of a request against the
// request-header CA, then reads the user from the request's headers.
type Authenticator struct {
	verifyOptions      x509request.VerifyOptionFunc
	allowedClientNames headerrequest.StringSliceProvider
	headers            authenticator.Request

	// verified maps a connection's leaf certificate (the same pointer for
	// every request on one connection) to the outcome of its verification.
	verified *lru.Cache
	now      func() time.Time
	// verifications counts the chains verified (for tests).
	verifications atomic.Int64
}

// verification is a remembered outcome: valid until, against roots.
type verification struct {
	roots *x509.CertPool
	until time.Time
	err   error
}

// AuthenticateRequest authenticates a request with a client certificate of
// the request-header CA; a request without a client certificate is not
// its to judge.
func (a *Authenticator) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	if req.TLS == nil || len(req.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	opts, ok := a.verifyOptions()
	if !ok {
		return nil, false, nil
	}
	if err := a.verify(req.TLS.PeerCertificates, opts); err != nil {
		return nil, false, err
	}
	if err := a.verifySubject(req.TLS.PeerCertificates[0]); err != nil {
		return nil, false, err
	}
	return a.headers.AuthenticateRequest(req)
}

// verify verifies a chain against opts, or remembers that it did.
func (a *Authenticator) verify(chain []*x509.Certificate, opts x509.VerifyOptions) error {
	leaf := chain[0]
	now := a.now()
	if v, ok := a.verified.Get(leaf); ok {
		v := v.(verification)
		if v.roots == opts.Roots && now.Before(v.until) {
			return v.err
		}
	}
	if opts.Intermediates == nil && len(chain) > 1 {
		opts.Intermediates = x509.NewCertPool()
		for _, intermediate := range chain[1:] {
			opts.Intermediates.AddCert(intermediate)
		}
	}
	opts.CurrentTime = now
	a.verifications.Add(1)
	_, err := leaf.Verify(opts)
	until := now.Add(verifiedFor)
	if err == nil && leaf.NotAfter.Before(until) {
		until = leaf.NotAfter
	}
	a.verified.Add(leaf, verification{roots: opts.Roots, until: until, err: err})
	return err
}

// verifySubject checks the certificate's common name against the allowed
// client names, when there are any.
func (a *Authenticator) verifySubject(leaf *x509.Certificate) error {
	allowed := a.allowedClientNames.Value()
	if len(allowed) == 0 {
		return nil
	}
	for _, name := range allowed {
		if name == leaf.Subject.CommonName {
			return nil
		}
	}
	return fmt.Errorf("x509: subject with cn=%s is not in the allowed list", leaf.Subject.CommonName)
}
