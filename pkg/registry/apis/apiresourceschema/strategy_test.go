package apiresourceschema

import (
	"context"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/registry/registrytest"
)

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := apisv1alpha2.Install(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSpecChangeIsRefused(t *testing.T) {
	strategy := NewStrategy(newScheme(t))
	old := &apisv1alpha1.APIResourceSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "v1.widgets.example.io", ResourceVersion: "1", Generation: 1},
		Spec: apisv1alpha1.APIResourceSchemaSpec{
			Group: "example.io", Scope: apiextensionsv1.ClusterScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
			Versions: []apisv1alpha1.APIResourceVersion{{Name: "v1", Served: true, Storage: true, Schema: runtime.RawExtension{Raw: []byte(`{"type":"object"}`)}}},
		},
	}
	updated := old.DeepCopy()
	updated.Spec.Scope = apiextensionsv1.NamespaceScoped
	strategy.PrepareForUpdate(context.Background(), updated, old)
	if errs := strategy.ValidateUpdate(context.Background(), updated, old); len(errs) != 1 || errs[0].Field != "spec" {
		t.Errorf("errors = %v, want one on spec", errs)
	}
}

func TestNewRESTHasNoStatusAndIsInCategoryKCP(t *testing.T) {
	s, err := NewREST(newScheme(t), &registrytest.RESTOptionsGetter{})
	if err != nil {
		t.Fatal(err)
	}
	if s.NamespaceScoped() || s.Categories()[0] != "kcp" || s.GetSingularName() != "apiresourceschema" {
		t.Errorf("scoped %v categories %v singular %q", s.NamespaceScoped(), s.Categories(), s.GetSingularName())
	}
}
