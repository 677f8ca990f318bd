package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/shardplane/shardplane/test/framework"
)

// createCowboysUntilCalled creates cowboys until the webhook has been
// called more than before times: configuration reaches the shard's caches
// asynchronously.
func createCowboysUntilCalled(t *testing.T, cowboys dynamic.ResourceInterface, group string, h *framework.AdmissionWebhook, before int) {
	t.Helper()
	framework.EventuallyWithin(t, admissionTimeout, func(ctx context.Context) error {
		c := cowboy(group, "")
		c.SetGenerateName("testing")
		if _, err := cowboys.Create(ctx, c, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		if calls, _ := h.Seen(); calls <= before {
			return fmt.Errorf("webhook called %d times", calls)
		}
		return nil
	}, "the export's webhook was never called")
}

// TestWebhooksOfTheExportJudgeBoundResources mirrors kcp's
// TestAPIBindingMutatingWebhook and TestAPIBindingValidatingWebhook: with
// webhooks for cowboys in the export's workspace and in a consumer, a
// cowboy created in the consumer is reviewed by the export's webhook (and
// shows the consumer's cluster), and so is one created in the export's
// workspace once it binds its own export; the consumer's webhook is never
// called.
func TestWebhooksOfTheExportJudgeBoundResources(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaceEnv(t)
	for _, mutating := range []bool{true, false} {
		name := map[bool]string{true: "Mutating", false: "Validating"}[mutating]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			org := e.readyOrg(ctx, t, "bound-webhook")
			source, group := publishCowboys(ctx, t, e, org)
			target, targetCowboys := bindCowboys(ctx, t, e, org, "target", source.path(), group)

			sourceHook, targetHook := framework.NewAdmissionWebhook(t), framework.NewAdmissionWebhook(t)
			sourceHook.Register(ctx, t, e.kube(t, kcpAdmin, source.path()), group, "v1alpha1", "cowboys", mutating)
			targetHook.Register(ctx, t, e.kube(t, kcpAdmin, target.path()), group, "v1alpha1", "cowboys", mutating)

			createCowboysUntilCalled(t, targetCowboys, group, sourceHook, 0)
			if _, cluster := sourceHook.Seen(); cluster != target.cluster() {
				t.Errorf("the object the export's webhook reviewed carries cluster %q, want the consumer's %s", cluster, target.cluster())
			}

			// The export's workspace binds its own export.
			sourceCowboys := bindCowboysIn(ctx, t, e, source.path(), source.path(), group)
			calls, _ := sourceHook.Seen()
			createCowboysUntilCalled(t, sourceCowboys, group, sourceHook, calls)
			if _, cluster := sourceHook.Seen(); cluster != source.cluster() {
				t.Errorf("the object the export's webhook reviewed carries cluster %q, want the export's %s", cluster, source.cluster())
			}
			if calls, _ := targetHook.Seen(); calls != 0 {
				t.Errorf("the consumer's own webhook was called %d times for a bound resource", calls)
			}
		})
	}
}

// TestAdmissionPolicyOfTheExportJudgesBoundResources mirrors kcp's
// TestValidatingAdmissionPolicyCrossWorkspaceAPIBinding: a policy and its
// binding in the export's workspace reject bad cowboys created in a
// consumer that binds the export.
func TestAdmissionPolicyOfTheExportJudgesBoundResources(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaceEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	org := e.readyOrg(ctx, t, "bound-policy")
	source, group := publishCowboys(ctx, t, e, org)
	target, targetCowboys := bindCowboys(ctx, t, e, org, "target", source.path(), group)
	admissionAPI := e.kube(t, kcpAdmin, source.path()).AdmissionregistrationV1()
	// Namespace default in both workspaces, told apart by a label: the
	// policy must see the consumer's, never its namesake in the export's
	// workspace.
	ensureDefaultNamespace(ctx, t, e, source.path())
	for cluster, owner := range map[string]string{source.path(): "provider", target.path(): "consumer"} {
		nss := e.kube(t, kcpAdmin, cluster).CoreV1().Namespaces()
		framework.Eventually(t, func(ctx context.Context) error {
			ns, err := nss.Get(ctx, "default", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if ns.Labels == nil {
				ns.Labels = map[string]string{}
			}
			ns.Labels["owner"] = owner
			_, err = nss.Update(ctx, ns, metav1.UpdateOptions{})
			return err
		}, "label namespace default of %s", cluster)
	}

	policy, err := admissionAPI.ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "policy-"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"v1alpha1"}, Resources: []string{"cowboys"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{
				{Expression: "object.spec.intent != 'bad'"},
				{Expression: "namespaceObject.metadata.labels['owner'] == 'consumer'"},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create ValidatingAdmissionPolicy: %v", err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		p, err := admissionAPI.ValidatingAdmissionPolicies().Get(ctx, policy.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Generation != p.Status.ObservedGeneration || p.Status.TypeChecking == nil || len(p.Status.TypeChecking.ExpressionWarnings) != 0 {
			return fmt.Errorf("status %+v", p.Status)
		}
		return nil
	}, "the policy's status was not type checked")

	newCowboy := func(intent string) *unstructured.Unstructured {
		c := cowboy(group, "")
		c.SetGenerateName("cowboy-")
		c.Object["spec"] = map[string]interface{}{"intent": intent}
		return c
	}
	// Without a binding the policy is inactive.
	if _, err := targetCowboys.Create(ctx, newCowboy("bad"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create a bad cowboy before the policy is bound: %v", err)
	}

	if _, err := admissionAPI.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "binding-"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: policy.Name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ValidatingAdmissionPolicyBinding: %v", err)
	}
	framework.EventuallyWithin(t, admissionTimeout, func(ctx context.Context) error {
		_, err := targetCowboys.Create(ctx, newCowboy("bad"), metav1.CreateOptions{})
		if apierrors.IsInvalid(err) && strings.Contains(err.Error(), "failed expression: object.spec.intent != 'bad'") {
			return nil
		}
		return fmt.Errorf("answered %v", err)
	}, "a bad cowboy in the consumer was not rejected by the export's policy")
	if _, err := targetCowboys.Create(ctx, newCowboy("good"), metav1.CreateOptions{}); err != nil {
		t.Errorf("create a good cowboy in the consumer: %v", err)
	}
}
