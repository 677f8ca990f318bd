package framework

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
)

// KubeClustersGVR is the resource of the mock mount kind of kcp's mounts
// e2e test.
var KubeClustersGVR = schema.GroupVersionResource{Group: "contrib.kcp.io", Version: "v1alpha1", Resource: "kubeclusters"}

// KubeClusterCRD is the mock mount kind of kcp's mounts e2e test: a
// cluster-scoped KubeCluster with a free-form status.
func KubeClusterCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "kubeclusters.contrib.kcp.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: KubeClustersGVR.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "kubeclusters", Singular: "kubecluster", Kind: "KubeCluster", ListKind: "KubeClusterList"},
			Scope: apiextensionsv1.ClusterScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: KubeClustersGVR.Version, Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
}

// KubeCluster is a KubeCluster object named name, annotated as a mount
// as kcp's documentation of mounts shows it (kcp's controller reads the
// object whether or not it is).
func KubeCluster(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": KubeClustersGVR.GroupVersion().String(), "kind": "KubeCluster",
		"metadata": map[string]interface{}{"name": name, "annotations": map[string]interface{}{tenancyv1alpha1.IsMountAnnotationKey: "true"}},
		"spec":     map[string]interface{}{},
	}}
}

// MountedWorkspace is a Workspace named name that mounts the KubeCluster
// named cluster.
func MountedWorkspace(name, cluster string) *tenancyv1alpha1.Workspace {
	return &tenancyv1alpha1.Workspace{
		TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "Workspace"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.WorkspaceSpec{Mount: &tenancyv1alpha1.Mount{Reference: tenancyv1alpha1.ObjectReference{
			APIVersion: KubeClustersGVR.GroupVersion().String(), Kind: "KubeCluster", Name: cluster,
		}}},
	}
}
