//go:build tools

// Package deps pins modules the build needs before code imports them.
package deps

import (
	_ "go.etcd.io/etcd/server/v3/embed"
	_ "k8s.io/apiextensions-apiserver/pkg/apiserver"
	_ "k8s.io/kubernetes/pkg/controlplane/apiserver"
	_ "k8s.io/kubernetes/pkg/generated/openapi"
	_ "k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac"
)
