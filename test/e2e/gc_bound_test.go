package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/dynamic"
)

// cowboysCRD is kcp's wildwest cowboys fixture (today.cowboys.wildwest.dev)
// in a group of the test's own, so that tests sharing the shard do not
// share its wildcard watch.
func cowboysCRD(group string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "cowboys." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "cowboys", Singular: "cowboy", Kind: "Cowboy", ListKind: "CowboyList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1alpha1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec":   {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"intent": {Type: "string"}}},
						"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"result": {Type: "string"}}},
					},
				}},
			}},
		},
	}
}

func cowboy(group, name string, owners ...metav1.OwnerReference) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": group + "/v1alpha1", "kind": "Cowboy"}}
	u.SetName(name)
	u.SetOwnerReferences(owners)
	return u
}

func cowboyRef(group string, owner *unstructured.Unstructured) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: group + "/v1alpha1", Kind: "Cowboy", Name: owner.GetName(), UID: owner.GetUID()}
}

// publishCowboys creates the cowboys schema and the today-cowboys export in
// a new provider workspace of org and returns it and the API group.
func publishCowboys(ctx context.Context, t *testing.T, e *wsEnv, org ws) (provider ws, group string) {
	t.Helper()
	kcp := e.kcp(t, kcpAdmin)
	provider = readyWorkspace(ctx, t, kcp, org.path(), "gc-api-export", nil)
	group = uniqueGroup("wildwest")
	publish(ctx, t, kcp, provider.path(), "today-cowboys", schemaFromCRD(t, "today.cowboys."+group, cowboysCRD(group)))
	return provider, group
}

// bindCowboys creates a workspace of org that binds the cowboys of provider
// and returns it with its cowboys client in namespace default.
func bindCowboys(ctx context.Context, t *testing.T, e *wsEnv, org ws, name, provider, group string) (ws, dynamic.ResourceInterface) {
	t.Helper()
	user := readyWorkspace(ctx, t, e.kcp(t, kcpAdmin), org.path(), name, nil)
	return user, bindCowboysIn(ctx, t, e, user.path(), provider, group)
}

// bindCowboysIn binds the cowboys of provider in workspace and returns its
// cowboys client in namespace default, once cowboys can be listed there.
func bindCowboysIn(ctx context.Context, t *testing.T, e *wsEnv, workspace, provider, group string) dynamic.ResourceInterface {
	t.Helper()
	bindAndWait(ctx, t, e.kcp(t, kcpAdmin), workspace, "cowboys", provider, "today-cowboys")
	ensureDefaultNamespace(ctx, t, e, workspace)
	cowboys := crdEnvFor(t, e.s, workspace).dynamic.Resource(schema.GroupVersionResource{Group: group, Version: "v1alpha1", Resource: "cowboys"})
	listNames(ctx, t, cowboys, "cowboys in "+workspace)
	return cowboys.Namespace("default")
}

// TestGarbageCollectorCollectsDependentsOfBoundTypes mirrors kcp's
// TestGarbageCollectorTypesFromBinding: in three workspaces binding the same export, deleting an owner cowboy
// collects the configmap and the cowboy it owns.
func TestGarbageCollectorCollectsDependentsOfBoundTypes(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaceEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	org := e.readyOrg(ctx, t, "gc-bound")
	provider, group := publishCowboys(ctx, t, e, org)

	// Parallel subtests end before the group does, and so before ctx.
	t.Run("workspaces", func(t *testing.T) {
		for i := range 3 {
			t.Run(fmt.Sprintf("tc%d", i), func(t *testing.T) {
				t.Parallel()
				user, cowboys := bindCowboys(ctx, t, e, org, fmt.Sprintf("gc-api-binding-%d", i), provider.path(), group)
				kube := e.kube(t, kcpAdmin, user.path())

				owner := createWidget(ctx, t, cowboys, cowboy(group, "owner"))
				ownedConfigMap, err := kube.CoreV1().ConfigMaps("default").Apply(ctx,
					corev1ac.ConfigMap("owned", "default").WithOwnerReferences(metav1ac.OwnerReference().
						WithAPIVersion(group+"/v1alpha1").WithKind("Cowboy").WithName(owner.GetName()).WithUID(owner.GetUID())),
					metav1.ApplyOptions{FieldManager: "e2e-test-runner"})
				if err != nil {
					t.Fatalf("apply owned configmap in %s: %v", user.path(), err)
				}
				ownedCowboy := createWidget(ctx, t, cowboys, cowboy(group, "owned", cowboyRef(group, owner)))

				if err := cowboys.Delete(ctx, owner.GetName(), metav1.DeleteOptions{}); err != nil {
					t.Fatalf("delete owner cowboy: %v", err)
				}
				waitGone(t, "configmap owned by a bound cowboy", getConfigMap(kube, "default", ownedConfigMap.Name))
				waitGone(t, "cowboy owned by a bound cowboy", func(ctx context.Context) error {
					_, err := cowboys.Get(ctx, ownedCowboy.GetName(), metav1.GetOptions{})
					return err
				})
			})
		}
	})
}

// TestGarbageCollectorKeepsSameNamedBoundOwnersOfOtherWorkspaces mirrors
// kcp's TestBoundAPICrossWorkspace: owners and
// dependents of the same names in two workspaces binding the same export
// do not confuse the collector; deleting the owner in one leaves the other
// workspace's owner and dependent alone.
func TestGarbageCollectorKeepsSameNamedBoundOwnersOfOtherWorkspaces(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaceEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	org := e.readyOrg(ctx, t, "gc-multi")
	provider, group := publishCowboys(ctx, t, e, org)
	user1, cowboys1 := bindCowboys(ctx, t, e, org, "gc-multi-user-1", provider.path(), group)
	user2, cowboys2 := bindCowboys(ctx, t, e, org, "gc-multi-user-2", provider.path(), group)
	kube1, kube2 := e.kube(t, kcpAdmin, user1.path()), e.kube(t, kcpAdmin, user2.path())

	dependentOf := func(owner *unstructured.Unstructured) *corev1ac.ConfigMapApplyConfiguration {
		return corev1ac.ConfigMap("dependent", "default").WithOwnerReferences(metav1ac.OwnerReference().
			WithAPIVersion(group + "/v1alpha1").WithKind("Cowboy").WithName(owner.GetName()).WithUID(owner.GetUID()))
	}
	owner1 := createWidget(ctx, t, cowboys1, cowboy(group, "owner"))
	dep1, err := kube1.CoreV1().ConfigMaps("default").Apply(ctx, dependentOf(owner1), metav1.ApplyOptions{FieldManager: "e2e-test-runner"})
	if err != nil {
		t.Fatalf("apply dependent configmap in %s: %v", user1.path(), err)
	}
	owner2 := createWidget(ctx, t, cowboys2, cowboy(group, "owner"))
	if _, err := kube2.CoreV1().ConfigMaps("default").Apply(ctx, dependentOf(owner2), metav1.ApplyOptions{FieldManager: "e2e-test-runner"}); err != nil {
		t.Fatalf("apply dependent configmap in %s: %v", user2.path(), err)
	}

	if err := cowboys1.Delete(ctx, owner1.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "user-1 dependent configmap", getConfigMap(kube1, "default", dep1.Name))

	gotOwner2, err := cowboys2.Get(ctx, owner2.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("user-2 owner cowboy should still exist: %v", err)
	}
	if gotOwner2.GetDeletionTimestamp() != nil {
		t.Errorf("user-2 owner cowboy has a deletionTimestamp")
	}
	gotDep2, err := kube2.CoreV1().ConfigMaps("default").Get(ctx, "dependent", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("user-2 dependent configmap should still exist: %v", err)
	}
	if gotDep2.DeletionTimestamp != nil {
		t.Errorf("user-2 dependent configmap has a deletionTimestamp")
	}
}
