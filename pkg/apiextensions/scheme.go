package apiextensions

import (
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
)

// The CustomResourceDefinition API is served from the same scheme as the
// built-in APIs, so that the storage factory knows its storage version and
// the OpenAPI definition namer tags its models with their group, version and
// kind (server-side apply and kubectl explain need that).
func init() {
	install.Install(legacyscheme.Scheme)
}
