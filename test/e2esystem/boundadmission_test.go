package e2esystem

import (
	"context"
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/system"
	"github.com/shardplane/shardplane/test/framework"
)

// newCowboy returns a cowboy of group with spec.intent.
func newCowboy(group, intent string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": group + "/v1alpha1", "kind": "Cowboy",
		"spec": map[string]interface{}{"intent": intent},
	}}
	u.SetGenerateName("testing")
	return u
}

// publishCowboysOn creates the cowboys schema of group and the
// today-cowboys export in provider.
func publishCowboysOn(ctx context.Context, t *testing.T, provider logicalcluster.Name, group string) {
	t.Helper()
	admin := kcp(t, sys.AdminConfig(t, ""))
	s := &apisv1alpha1.APIResourceSchema{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha1.SchemeGroupVersion.String(), Kind: "APIResourceSchema"},
		ObjectMeta: metav1.ObjectMeta{Name: "today.cowboys." + group},
		Spec: apisv1alpha1.APIResourceSchemaSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "cowboys", Singular: "cowboy", Kind: "Cowboy", ListKind: "CowboyList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apisv1alpha1.APIResourceVersion{{Name: "v1alpha1", Served: true, Storage: true,
				Schema: runtime.RawExtension{Raw: []byte(`{"type":"object","properties":{"spec":{"type":"object","properties":{"intent":{"type":"string"}}}}}`)}}},
		},
	}
	if err := admin.Create(ctx, provider, schemasGVR, s, &apisv1alpha1.APIResourceSchema{}); err != nil {
		t.Fatalf("create APIResourceSchema: %v", err)
	}
	export := &apisv1alpha2.APIExport{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport"},
		ObjectMeta: metav1.ObjectMeta{Name: "today-cowboys"},
		Spec:       apisv1alpha2.APIExportSpec{Resources: []apisv1alpha2.ResourceSchema{{Name: "cowboys", Group: group, Schema: s.Name}}},
	}
	if err := admin.Create(ctx, provider, exportsGVR, export, &apisv1alpha2.APIExport{}); err != nil {
		t.Fatalf("create APIExport: %v", err)
	}
}

// bindCowboysOn binds provider's today-cowboys in consumer and returns the
// consumer's cowboys in namespace default, once they are served.
func bindCowboysOn(ctx context.Context, t *testing.T, consumer, provider logicalcluster.Name, group string) dynamic.ResourceInterface {
	t.Helper()
	admin := kcp(t, sys.AdminConfig(t, ""))
	binding := &apisv1alpha2.APIBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: "cowboys"},
		Spec:       apisv1alpha2.APIBindingSpec{Reference: apisv1alpha2.BindingReference{Export: &apisv1alpha2.ExportBindingReference{Path: string(provider), Name: "today-cowboys"}}},
	}
	framework.Eventually(t, func(ctx context.Context) error {
		return admin.Create(ctx, consumer, bindingsGVR, binding, &apisv1alpha2.APIBinding{})
	}, "bind today-cowboys of %s in %s", provider, consumer)
	framework.Eventually(t, func(ctx context.Context) error {
		got := &apisv1alpha2.APIBinding{}
		if err := admin.Get(ctx, consumer, bindingsGVR, binding.Name, got); err != nil {
			return err
		}
		if got.Status.Phase != apisv1alpha2.APIBindingPhaseBound {
			return fmt.Errorf("phase %q", got.Status.Phase)
		}
		return nil
	}, "the binding in %s is Bound", consumer)
	cfg := sys.AdminConfig(t, string(consumer))
	if _, err := kube(t, cfg).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace default in %s: %v", consumer, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cowboys := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1alpha1", Resource: "cowboys"}).Namespace("default")
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := cowboys.List(ctx, metav1.ListOptions{})
		return err
	}, "cowboys are served in %s", consumer)
	return cowboys
}

// TestAdmissionOfAnExportOnAnotherShardJudgesBoundResources is kcp's
// TestAPIBindingMutatingWebhook, TestAPIBindingValidatingWebhook and
// TestValidatingAdmissionPolicyCrossWorkspaceAPIBinding with the export's
// workspace on the root shard and the consumer on the other, every request
// through the front-proxy: the export's webhooks review cowboys created in
// the consumer (and see the consumer's cluster), the consumer's own are
// never called, and the export's policy rejects bad cowboys once bound.
// The consumer's shard reads the export's configuration from the cache
// server, as kcp's does. Deliberately different: kcp replicates the
// admission configuration of every workspace, we only that of workspaces
// holding an APIExport, the only one another shard ever applies.
func TestAdmissionOfAnExportOnAnotherShardJudgesBoundResources(t *testing.T) {
	if shards < 2 {
		t.Skip("needs two shards")
	}
	ctx := testContext(t)
	providerWS := readyWorkspace(ctx, t, "root", uniqueName("adm-provider"), "organization", "root")
	consumerWS := readyWorkspace(ctx, t, "root", uniqueName("adm-consumer"), "organization", system.ShardName(1))
	if shardOf(providerWS) == shardOf(consumerWS) {
		t.Fatalf("provider and consumer both on shard %q", shardOf(providerWS))
	}
	provider, consumer := logicalcluster.Name(providerWS.Spec.Cluster), logicalcluster.Name(consumerWS.Spec.Cluster)
	group := uniqueName("wildwest") + ".dev"
	publishCowboysOn(ctx, t, provider, group)
	cowboys := bindCowboysOn(ctx, t, consumer, provider, group)
	providerKube, consumerKube := kube(t, sys.AdminConfig(t, string(provider))), kube(t, sys.AdminConfig(t, string(consumer)))

	for _, mutating := range []bool{true, false} {
		t.Run(map[bool]string{true: "MutatingWebhook", false: "ValidatingWebhook"}[mutating], func(t *testing.T) {
			providerHook, consumerHook := framework.NewAdmissionWebhook(t), framework.NewAdmissionWebhook(t)
			providerHook.Register(ctx, t, providerKube, group, "v1alpha1", "cowboys", mutating)
			consumerHook.Register(ctx, t, consumerKube, group, "v1alpha1", "cowboys", mutating)
			// The configuration reaches the consumer's shard through the
			// cache server; until then creates pass unreviewed (or, while a
			// previous subtest's deleted configuration lingers, fail).
			framework.Eventually(t, func(ctx context.Context) error {
				if _, err := cowboys.Create(ctx, newCowboy(group, "good"), metav1.CreateOptions{}); err != nil {
					return err
				}
				if calls, _ := providerHook.Seen(); calls == 0 {
					return fmt.Errorf("the export's webhook was not called")
				}
				return nil
			}, "a cowboy created in the consumer is reviewed by the export's webhook")
			if _, cluster := providerHook.Seen(); cluster != string(consumer) {
				t.Errorf("the object the export's webhook reviewed carries cluster %q, want the consumer's %s", cluster, consumer)
			}
			if calls, _ := consumerHook.Seen(); calls != 0 {
				t.Errorf("the consumer's own webhook was called %d times for a bound resource", calls)
			}
		})
	}

	t.Run("ValidatingAdmissionPolicy", func(t *testing.T) {
		api := providerKube.AdmissionregistrationV1()
		policy, err := api.ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "policy-"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: ptr.To(admissionregistrationv1.Fail),
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"v1alpha1"}, Resources: []string{"cowboys"}},
					},
				}}},
				Validations: []admissionregistrationv1.Validation{{Expression: "object.spec.intent != 'bad'"}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create ValidatingAdmissionPolicy: %v", err)
		}
		if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "binding-"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName: policy.Name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create ValidatingAdmissionPolicyBinding: %v", err)
		}
		framework.Eventually(t, func(ctx context.Context) error {
			_, err := cowboys.Create(ctx, newCowboy(group, "bad"), metav1.CreateOptions{})
			if apierrors.IsInvalid(err) && strings.Contains(err.Error(), "failed expression: object.spec.intent != 'bad'") {
				return nil
			}
			return fmt.Errorf("answered %v", err)
		}, "a bad cowboy in the consumer was not rejected by the export's policy")
		if _, err := cowboys.Create(ctx, newCowboy(group, "good"), metav1.CreateOptions{}); err != nil {
			t.Errorf("create a good cowboy in the consumer: %v", err)
		}
	})
}
