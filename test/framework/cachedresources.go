package framework

import (
	"context"
	"fmt"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// InstancesGVR is the resource of kcp's cached resources e2e test: the
// cluster-scoped instances.machines.svm.io.
var InstancesGVR = schema.GroupVersionResource{Group: "machines.svm.io", Version: "v1alpha1", Resource: "instances"}

// InstancesPartOfLabel is the label kcp's test selects its instances by.
const InstancesPartOfLabel = "app.kubernetes.io/part-of"

// InstancesCRD is the CRD of kcp's cached resources e2e test.
func InstancesCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: InstancesGVR.Resource + "." + InstancesGVR.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: InstancesGVR.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "instances", Singular: "instance", Kind: "Instance", ListKind: "InstanceList"},
			Scope: apiextensionsv1.ClusterScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: InstancesGVR.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
}

// Instance is an Instance named name with the given labels and tier.
func Instance(name, tier string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": InstancesGVR.GroupVersion().String(), "kind": "Instance",
		"metadata": map[string]interface{}{"name": name},
		"spec":     map[string]interface{}{"instanceType": "small", "name": name, "tier": tier},
	}}
	u.SetLabels(labels)
	return u
}

// InstallInstances creates the instances CRD through config (a workspace's)
// and waits until instances can be created there.
func InstallInstances(ctx context.Context, t testing.TB, config *rest.Config) dynamic.ResourceInterface {
	t.Helper()
	crds := apiextensionsclient.NewForConfigOrDie(config).ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crds.Create(ctx, InstancesCRD(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create instances CRD: %v", err)
	}
	instances := dynamic.NewForConfigOrDie(config).Resource(InstancesGVR)
	Eventually(t, func(ctx context.Context) error {
		_, err := instances.List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list instances: %w", err)
		}
		return nil
	}, "instances served")
	return instances
}
