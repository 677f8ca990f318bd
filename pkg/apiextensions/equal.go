package apiextensions

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apiserver/pkg/registry/rest"
)

// handlersGetterUpdaterPatcher is the storage of a subresource.
type handlersGetterUpdaterPatcher interface {
	rest.Getter
	rest.Updater
	rest.Patcher
}

func equalSpec(a, b *apiextensionsv1.CustomResourceDefinitionSpec) bool {
	return equality.Semantic.DeepEqual(a, b)
}

func equalNames(a, b *apiextensionsv1.CustomResourceDefinitionNames) bool {
	return equality.Semantic.DeepEqual(a, b)
}
