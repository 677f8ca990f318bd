package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
)

// deploymentsCRD defines apps/v1 Deployments as kcp's compute exports do
// (config/rootcompute), cut down to what the test patches.
func deploymentsCRD() *apiextensionsv1.CustomResourceDefinition {
	container := apiextensionsv1.JSONSchemaProps{Type: "object", Required: []string{"name"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"name": {Type: "string"}, "image": {Type: "string"},
	}}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "deployments.apps"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "apps",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "deployments", Singular: "deployment", Kind: "Deployment", ListKind: "DeploymentList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"replicas": {Type: "integer"},
							"template": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
								"metadata": {Type: "object", XPreserveUnknownFields: ptr.To(true)},
								"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
									"containers": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &container}},
								}},
							}},
						}},
						"status": {Type: "object", XPreserveUnknownFields: ptr.To(true)},
					},
				}},
			}},
		},
	}
}

var deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

func deploymentWithContainers(name string, containers ...string) *unstructured.Unstructured {
	var cs []interface{}
	for _, c := range containers {
		cs = append(cs, map[string]interface{}{"name": c, "image": c + ":1"})
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]interface{}{"name": name},
		"spec":     map[string]interface{}{"replicas": int64(1), "template": map[string]interface{}{"spec": map[string]interface{}{"containers": cs}}},
	}}
}

// requireStrategicMergeByName patches one container of a deployment with a
// strategic merge patch, as kubectl patch does, and checks that the
// containers were merged by name, not replaced.
func requireStrategicMergeByName(ctx context.Context, t *testing.T, deployments dynamic.ResourceInterface, where string) {
	t.Helper()
	createWidget(ctx, t, deployments, deploymentWithContainers("web", "app", "sidecar"))
	patch := []byte(`{"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"sidecar","image":"sidecar:2"}]}}}}`)
	patched, err := deployments.Patch(ctx, "web", types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("%s: strategic merge patch of a deployment: %v", where, err)
	}
	containers, _, _ := unstructured.NestedSlice(patched.Object, "spec", "template", "spec", "containers")
	var got []string
	for _, c := range containers {
		m := c.(map[string]interface{})
		got = append(got, fmt.Sprintf("%s=%s", m["name"], m["image"]))
	}
	if fmt.Sprint(got) != "[app=app:1 sidecar=sidecar:2]" {
		t.Errorf("%s: containers after the strategic merge patch: %v, want app=app:1 and sidecar=sidecar:2", where, got)
	}
	if replicas, _, _ := unstructured.NestedInt64(patched.Object, "spec", "replicas"); replicas != 3 {
		t.Errorf("%s: spec.replicas = %d, want 3", where, replicas)
	}
	status := []byte(`{"status":{"conditions":[{"type":"Available","status":"True"}]}}`)
	if _, err := deployments.Patch(ctx, "web", types.StrategicMergePatchType, status, metav1.PatchOptions{}, "status"); err != nil {
		t.Errorf("%s: strategic merge patch of the status: %v", where, err)
	}
}

// rolloutsCRD defines apps/v1 Rollouts, a kind of a built-in group that
// client-go does not know: steps is a map list keyed by name, args an
// atomic list.
func rolloutsCRD() *apiextensionsv1.CustomResourceDefinition {
	step := apiextensionsv1.JSONSchemaProps{Type: "object", Required: []string{"name"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"name": {Type: "string"}, "weight": {Type: "integer"},
	}}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "rollouts.apps"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "apps",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "rollouts", Singular: "rollout", Kind: "Rollout", ListKind: "RolloutList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"steps": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &step},
								XListType: ptr.To("map"), XListMapKeys: []string{"name"}},
							"args": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
						}},
					},
				}},
			}},
		},
	}
}

var rolloutsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "rollouts"}

// requireStrategicMergeBySchema patches a rollout with a strategic merge
// patch and checks that its steps were merged by name, the key its schema
// gives, while the atomic args list was replaced. kcp takes merge keys
// only from x-kubernetes-patch-merge-key, which a CRD's schema cannot
// carry, so it replaces such lists; here x-kubernetes-list-map-keys tells
// the merge key instead, as server-side apply reads it.
func requireStrategicMergeBySchema(ctx context.Context, t *testing.T, rollouts dynamic.ResourceInterface, where string) {
	t.Helper()
	createWidget(ctx, t, rollouts, &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apps/v1", "kind": "Rollout",
		"metadata": map[string]interface{}{"name": "r"},
		"spec": map[string]interface{}{
			"steps": []interface{}{map[string]interface{}{"name": "canary", "weight": int64(10)}, map[string]interface{}{"name": "full", "weight": int64(100)}},
			"args":  []interface{}{"a", "b"},
		},
	}})
	patch := []byte(`{"spec":{"steps":[{"name":"canary","weight":20}],"args":["c"]}}`)
	patched, err := rollouts.Patch(ctx, "r", types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("%s: strategic merge patch of a rollout: %v", where, err)
	}
	steps, _, _ := unstructured.NestedSlice(patched.Object, "spec", "steps")
	var got []string
	for _, s := range steps {
		m := s.(map[string]interface{})
		got = append(got, fmt.Sprintf("%s=%v", m["name"], m["weight"]))
	}
	if fmt.Sprint(got) != "[canary=20 full=100]" {
		t.Errorf("%s: steps after the strategic merge patch: %v, want canary=20 and full=100", where, got)
	}
	if args, _, _ := unstructured.NestedStringSlice(patched.Object, "spec", "args"); fmt.Sprint(args) != "[c]" {
		t.Errorf("%s: spec.args = %v, want [c]", where, args)
	}
	// The patch was stored, not only answered.
	stored, err := rollouts.Get(ctx, "r", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("%s: get the rollout: %v", where, err)
	}
	if steps, _, _ := unstructured.NestedSlice(stored.Object, "spec", "steps"); len(steps) != 2 {
		t.Errorf("%s: stored steps: %v", where, steps)
	}
	// A patch that names fields the schema does not have is pruned as any
	// write of a custom resource is.
	patched, err = rollouts.Patch(ctx, "r", types.StrategicMergePatchType, []byte(`{"spec":{"unknown":"x"}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("%s: strategic merge patch with an unknown field: %v", where, err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(patched.Object, "spec", "unknown"); found {
		t.Errorf("%s: an unknown field was stored", where)
	}
}

// TestStrategicMergePatchOfBuiltInKindsServedAsCRDsOrBindings: as in kcp,
// Deployments defined by a CRD or bound from an export (as kcp's compute
// exports publish them) take strategic merge patches, merged with the
// built-in type's merge keys; so does another kind of a group client-go
// registers, merged as its schema says; a kind of another group keeps
// refusing them with 415.
func TestStrategicMergePatchOfBuiltInKindsServedAsCRDsOrBindings(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaceEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	kcp := e.kcp(t, kcpAdmin)
	org := e.readyOrg(ctx, t, "smp")
	withCRD := readyWorkspace(ctx, t, kcp, org.path(), "with-crd", nil)
	compute := readyWorkspace(ctx, t, kcp, org.path(), "compute", nil)
	consumer := readyWorkspace(ctx, t, kcp, org.path(), "consumer", nil)
	for _, w := range []ws{withCRD, consumer} {
		ensureDefaultNamespace(ctx, t, e, w.path())
	}

	inCRD := crdEnvFor(t, e.s, withCRD.path())
	inCRD.createCRD(ctx, t, deploymentsCRD())
	requireStrategicMergeByName(ctx, t, inCRD.dynamic.Resource(deploymentsGVR).Namespace("default"), "CRD")

	publish(ctx, t, kcp, compute.path(), "kubernetes", schemaFromCRD(t, "v1.deployments.apps", deploymentsCRD()))
	bindAndWait(ctx, t, kcp, consumer.path(), "kubernetes", compute.path(), "kubernetes")
	requireStrategicMergeByName(ctx, t, crdEnvFor(t, e.s, consumer.path()).dynamic.Resource(deploymentsGVR).Namespace("default"), "bound")

	// A kind of a built-in group that client-go does not know merges by
	// the keys of its schema.
	inCRD.createCRD(ctx, t, rolloutsCRD())
	requireStrategicMergeBySchema(ctx, t, inCRD.dynamic.Resource(rolloutsGVR).Namespace("default"), "CRD")
	publish(ctx, t, kcp, compute.path(), "rollouts", schemaFromCRD(t, "v1.rollouts.apps", rolloutsCRD()))
	bindAndWait(ctx, t, kcp, consumer.path(), "rollouts", compute.path(), "rollouts")
	requireStrategicMergeBySchema(ctx, t, crdEnvFor(t, e.s, consumer.path()).dynamic.Resource(rolloutsGVR).Namespace("default"), "bound")

	inCRD.createCRD(ctx, t, widgetCRD())
	createWidget(ctx, t, inCRD.widgets("default"), widget("w", map[string]interface{}{}))
	_, err := inCRD.widgets("default").Patch(ctx, "w", types.StrategicMergePatchType, []byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{})
	requireStatus(t, err, http.StatusUnsupportedMediaType, "strategic merge patch of a custom kind")
}
