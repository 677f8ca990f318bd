package cacheserver

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	unionauth "k8s.io/apiserver/pkg/authentication/request/union"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/authentication/token/tokenfile"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	genericoptions "k8s.io/apiserver/pkg/server/options"
)

// AuthenticationOptions are the ways clients of a cache server prove who
// they are: the shards' client certificates, static tokens, and anonymous
// requests (for the probes). The flags are kube-apiserver's; the cache
// server needs none of its other methods, and linking kube-apiserver's
// options would pull a hundred packages of k8s.io/kubernetes into the
// binary and its resident memory.
type AuthenticationOptions struct {
	ClientCert genericoptions.ClientCertAuthenticationOptions
	// TokenFile is a kube-apiserver token CSV file.
	TokenFile string
	// Anonymous accepts requests without credentials as system:anonymous.
	Anonymous bool
}

// NewAuthenticationOptions returns the defaults: anonymous requests on,
// nothing else until a flag names a file.
func NewAuthenticationOptions() *AuthenticationOptions {
	return &AuthenticationOptions{Anonymous: true}
}

// AddFlags registers --client-ca-file, --token-auth-file and
// --anonymous-auth, as kube-apiserver does.
func (o *AuthenticationOptions) AddFlags(fs *pflag.FlagSet) {
	o.ClientCert.AddFlags(fs)
	fs.StringVar(&o.TokenFile, "token-auth-file", o.TokenFile, ""+
		"If set, the file that will be used to secure the secure port of the API server via token authentication.")
	fs.BoolVar(&o.Anonymous, "anonymous-auth", o.Anonymous, ""+
		"Enables anonymous requests to the secure port of the API server. "+
		"Requests that are not rejected by another authentication method are treated as anonymous requests. "+
		"Anonymous requests have a username of system:anonymous, and a group name of system:unauthenticated.")
}

// Validate checks that the files named exist.
func (o *AuthenticationOptions) Validate() []error {
	var errs []error
	for flag, file := range map[string]string{"--client-ca-file": o.ClientCert.ClientCA, "--token-auth-file": o.TokenFile} {
		if file == "" {
			continue
		}
		if _, err := os.Stat(file); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", flag, err))
		}
	}
	return errs
}

// authentication is what the options build: the client CA (nil without
// one), which serving must request certificates of, and the
// authenticator.
type authentication struct {
	clientCA      dynamiccertificates.CAContentProvider
	authenticator authenticator.Request
}

// toAuthentication builds the authenticators: client certificates (the
// common name is the user, organizations the groups; the CA file is
// reloaded when it changes), then tokens, then anonymous.
func (o *AuthenticationOptions) toAuthentication() (authentication, error) {
	var a authentication
	var authenticators []authenticator.Request
	clientCA, err := o.ClientCert.GetClientCAContentProvider()
	if err != nil {
		return a, fmt.Errorf("--client-ca-file: %w", err)
	}
	if clientCA != nil {
		a.clientCA = clientCA
		authenticators = append(authenticators, x509request.NewDynamic(clientCA.VerifyOptions, x509request.CommonNameUserConversion))
	}
	// Without a token file, no token is valid: a request with a bearer
	// token nothing accepts is refused, never taken as anonymous.
	tokens := tokenfile.New(nil)
	if o.TokenFile != "" {
		if tokens, err = tokenfile.NewCSV(o.TokenFile); err != nil {
			return a, fmt.Errorf("--token-auth-file: %w", err)
		}
	}
	authenticators = append(authenticators, bearertoken.New(tokens))
	// As kube-apiserver: every authenticated user is in
	// system:authenticated.
	a.authenticator = group.NewAuthenticatedGroupAdder(unionauth.New(authenticators...))
	if o.Anonymous {
		// Anonymous comes last, and only for requests that sent no
		// credentials: a bad certificate or token stays an error.
		a.authenticator = unionauth.NewFailOnError(a.authenticator, anonymous.NewAuthenticator(nil))
	}
	return a, nil
}
