package shard

import (
	"context"

	"k8s.io/apiserver/pkg/authentication/authenticator"
)

// startKubeControllers starts the Kubernetes controllers that every logical
// cluster needs (garbage collection, service accounts), each one instance
// for all clusters. Called once the wildcard informers have synced.
func (c *Config) startKubeControllers(ctx context.Context) error { return nil }

// serviceAccountAuthenticator authenticates service account tokens in the
// logical cluster they were issued in; nil when not configured.
func serviceAccountAuthenticator(*Config) authenticator.Request { return nil }
