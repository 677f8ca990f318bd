package workspaceauthenticationconfiguration

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/registry/kcpstrategy"
)

// REST serves workspaceauthenticationconfigurations, in the category "kcp".
type REST struct {
	*kcpstrategy.REST
}

// TableColumns are the columns of "kubectl get
// workspaceauthenticationconfigurations" after NAME.
var TableColumns = []apiextensionsv1.CustomResourceColumnDefinition{
	{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp", Description: "Time since the object was created"},
}

// NewREST returns the storage of workspaceauthenticationconfigurations.
// typer must know the tenancy.kcp.io types.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*REST, error) {
	strategy := NewStrategy(typer)
	main, _, err := kcpstrategy.NewREST(kcpstrategy.Kind{
		NewFunc:          func() runtime.Object { return &tenancyv1alpha1.WorkspaceAuthenticationConfiguration{} },
		NewListFunc:      func() runtime.Object { return &tenancyv1alpha1.WorkspaceAuthenticationConfigurationList{} },
		Resource:         tenancyv1alpha1.Resource("workspaceauthenticationconfigurations"),
		SingularResource: tenancyv1alpha1.Resource("workspaceauthenticationconfiguration"),
		Strategy:         strategy,
		TableColumns:     TableColumns,
	}, optsGetter)
	if err != nil {
		return nil, err
	}
	return &REST{main}, nil
}
