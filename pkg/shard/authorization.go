package shard

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/authorization/path"
	"k8s.io/apiserver/pkg/authorization/union"
	authzmodes "k8s.io/kubernetes/pkg/kubeapiserver/authorizer/modes"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"
)

// The steps of kcp's --authorization-order.
const (
	authorizerAlwaysAllowGroups = "AlwaysAllowGroups"
	authorizerAlwaysAllowPaths  = "AlwaysAllowPaths"
	authorizerRBAC              = "RBAC"
	authorizerWebhook           = "Webhook"
)

// defaultAuthorizationOrder is kcp's default order.
var defaultAuthorizationOrder = []string{authorizerAlwaysAllowGroups, authorizerAlwaysAllowPaths, authorizerRBAC, authorizerWebhook}

// authorizationOptions are kcp's authorization flags: the order of the
// steps, the paths everyone may read, and an optional authorization
// webhook (pkg/server/options/authorization.go in kcp).
type authorizationOptions struct {
	// Order orders AlwaysAllowGroups (system:masters), AlwaysAllowPaths,
	// RBAC (the shard's whole chain: workspace access, system CRDs,
	// maximal permission policies, system:kcp:admin, per-cluster RBAC)
	// and Webhook; the first that allows or denies decides.
	Order []string
	// AlwaysAllowPaths are allowed to everyone ("*" suffix: a prefix).
	AlwaysAllowPaths []string
	// Webhook is asked when --authorization-webhook-config-file is set.
	Webhook *kubeoptions.BuiltInAuthorizationOptions
}

func newAuthorizationOptions() *authorizationOptions {
	return &authorizationOptions{
		Order:            defaultAuthorizationOrder,
		AlwaysAllowPaths: []string{"/healthz", "/readyz", "/livez"},
		Webhook:          kubeoptions.NewBuiltInAuthorizationOptions(),
	}
}

func (o *authorizationOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.Order, "authorization-order", o.Order,
		"Order of the authorization steps "+strings.Join(defaultAuthorizationOrder, ", ")+" (RBAC is the shard's whole chain); the first that allows or denies decides. As kcp's.")
	fs.StringSliceVar(&o.AlwaysAllowPaths, "authorization-always-allow-paths", o.AlwaysAllowPaths,
		"HTTP paths everyone may read without further authorization (a trailing * matches a prefix).")
	fs.StringVar(&o.Webhook.WebhookConfigFile, "authorization-webhook-config-file", o.Webhook.WebhookConfigFile,
		"Kubeconfig of an authorization webhook (SubjectAccessReview), asked at its place in --authorization-order.")
	fs.StringVar(&o.Webhook.WebhookVersion, "authorization-webhook-version", o.Webhook.WebhookVersion,
		"API version of the SubjectAccessReview sent to the authorization webhook.")
	fs.DurationVar(&o.Webhook.WebhookCacheAuthorizedTTL, "authorization-webhook-cache-authorized-ttl", o.Webhook.WebhookCacheAuthorizedTTL,
		"How long the webhook's allowed decisions are cached.")
	fs.DurationVar(&o.Webhook.WebhookCacheUnauthorizedTTL, "authorization-webhook-cache-unauthorized-ttl", o.Webhook.WebhookCacheUnauthorizedTTL,
		"How long the webhook's other decisions are cached.")
}

// validate checks the order and the webhook's flags.
func (o *authorizationOptions) validate() error {
	known := sets.New(defaultAuthorizationOrder...)
	seen := sets.New[string]()
	for _, step := range o.Order {
		if !known.Has(step) {
			return fmt.Errorf("--authorization-order: unknown step %q (known: %s)", step, strings.Join(defaultAuthorizationOrder, ", "))
		}
		if seen.Has(step) {
			return fmt.Errorf("--authorization-order: step %q given twice", step)
		}
		seen.Insert(step)
	}
	if !seen.Has(authorizerRBAC) {
		return fmt.Errorf("--authorization-order must contain %s, the shard's own chain", authorizerRBAC)
	}
	if o.Webhook.WebhookConfigFile != "" {
		if !seen.Has(authorizerWebhook) {
			return fmt.Errorf("--authorization-webhook-config-file needs %s in --authorization-order", authorizerWebhook)
		}
		w := *o.Webhook
		w.Modes = []string{authzmodes.ModeWebhook}
		if errs := w.Validate(); len(errs) > 0 {
			return fmt.Errorf("authorization webhook: %v", errs)
		}
	}
	return nil
}

// authorizer puts the shard's chain (kcp) at its place in the order,
// with the other steps around it.
func (o *authorizationOptions) authorizer(ctx context.Context, kcp authorizer.Authorizer, serverID string) (authorizer.Authorizer, error) {
	var steps []union.NamedAuthorizer
	for _, step := range o.Order {
		switch step {
		case authorizerAlwaysAllowGroups:
			steps = append(steps, union.NamedAuthorizer{AuthorizerName: step, Authorizer: authorizerfactory.NewPrivilegedGroups(user.SystemPrivilegedGroup)})
		case authorizerAlwaysAllowPaths:
			if len(o.AlwaysAllowPaths) == 0 {
				continue
			}
			a, err := path.NewAuthorizer(o.AlwaysAllowPaths)
			if err != nil {
				return nil, fmt.Errorf("--authorization-always-allow-paths: %w", err)
			}
			steps = append(steps, union.NamedAuthorizer{AuthorizerName: step, Authorizer: a})
		case authorizerRBAC:
			steps = append(steps, union.NamedAuthorizer{AuthorizerName: step, Authorizer: kcp})
		case authorizerWebhook:
			if o.Webhook.WebhookConfigFile == "" {
				continue
			}
			w := *o.Webhook
			w.Modes = []string{authzmodes.ModeWebhook}
			config, err := w.ToAuthorizationConfig(nil)
			if err != nil {
				return nil, fmt.Errorf("authorization webhook: %w", err)
			}
			a, _, err := config.New(ctx, serverID)
			if err != nil {
				return nil, fmt.Errorf("authorization webhook: %w", err)
			}
			steps = append(steps, union.NamedAuthorizer{AuthorizerName: step, Authorizer: a})
		}
	}
	return union.New(steps...)
}
