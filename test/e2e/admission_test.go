package e2e

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/shardplane/shardplane/test/framework"
)

// Configmaps named forbidden-* are what the tenants' admission rules deny;
// the label is what their mutating rules add.
const (
	forbiddenPrefix  = "forbidden-"
	mutatedLabel     = "mutated-by"
	admissionTimeout = 60 * time.Second
)

// admissionTenants are two logical clusters of the shared shard, A holding
// the admission configuration and B not, with kcp-admin clients.
type admissionTenants struct {
	a, b       string
	kubeA      kubernetes.Interface
	kubeB      kubernetes.Interface
	kubeByName func(cluster string) kubernetes.Interface
}

func newAdmissionTenants(t *testing.T, s *framework.Shard, prefix string) admissionTenants {
	t.Helper()
	a, b := s.NewLogicalCluster(t, prefix+"-a"), s.NewLogicalCluster(t, prefix+"-b")
	kube := func(cluster string) kubernetes.Interface { return kubeClient(t, s, "base", cluster) }
	return admissionTenants{a: a, b: b, kubeA: kube(a), kubeB: kube(b), kubeByName: kube}
}

// tryConfigMap creates configmap name in namespace default.
func tryConfigMap(ctx context.Context, c kubernetes.Interface, name string) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
	return c.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
}

// eventuallyRejected creates configmaps name-0, name-1, … until admission
// rejects one with a message containing want: configuration reaches the
// shard's caches asynchronously.
func eventuallyRejected(t *testing.T, c kubernetes.Interface, name, want string) {
	t.Helper()
	var last error
	i := 0
	framework.EventuallyWithin(t, admissionTimeout, func(ctx context.Context) error {
		_, last = tryConfigMap(ctx, c, fmt.Sprintf("%s%d", name, i))
		i++
		if last == nil || !strings.Contains(last.Error(), want) {
			return fmt.Errorf("answered %v", last)
		}
		return nil
	}, "creating configmaps %s*: never rejected with %q", name, want)
	if apierrors.ReasonForError(last) == metav1.StatusReasonInternalError {
		t.Fatalf("rejection of %s* is an internal error: %v", name, last)
	}
}

// eventuallyLabeled creates configmaps name-0, name-1, … until one comes
// back with the mutated label set to want.
func eventuallyLabeled(t *testing.T, c kubernetes.Interface, name, want string) {
	t.Helper()
	i := 0
	framework.EventuallyWithin(t, admissionTimeout, func(ctx context.Context) error {
		cm, err := tryConfigMap(ctx, c, fmt.Sprintf("%s%d", name, i))
		i++
		if err != nil {
			return err
		}
		if cm.Labels[mutatedLabel] != want {
			return fmt.Errorf("labels %v", cm.Labels)
		}
		return nil
	}, "creating configmaps %s*: never labeled %s=%s", name, mutatedLabel, want)
}

// requireUntouched creates configmap name and fails unless it is admitted
// without the mutated label.
func requireUntouched(ctx context.Context, t *testing.T, c kubernetes.Interface, cluster, name string) {
	t.Helper()
	cm, err := tryConfigMap(ctx, c, name)
	if err != nil {
		t.Fatalf("create configmap %s in %s, which has no admission configuration: %v", name, cluster, err)
	}
	if v, ok := cm.Labels[mutatedLabel]; ok {
		t.Errorf("configmap %s in %s was mutated by another cluster's configuration: %s=%s", name, cluster, mutatedLabel, v)
	}
}

// tenantWebhook is the webhook server of tenant A: /validate denies
// configmaps named forbidden-*, /mutate labels every configmap. seen
// returns the logical clusters (kcp.io/cluster) of the objects it reviewed.
func tenantWebhook(t *testing.T) (url string, caBundle []byte, seen func() map[string]bool) {
	t.Helper()
	var mu sync.Mutex
	clusters := map[string]bool{}
	review := func(w http.ResponseWriter, r *http.Request, decide func(*admissionv1.AdmissionRequest, *admissionv1.AdmissionResponse)) {
		var in admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		var obj metav1.PartialObjectMetadata
		_ = json.Unmarshal(in.Request.Object.Raw, &obj)
		mu.Lock()
		clusters[obj.Annotations[clusterAnnotation]] = true
		mu.Unlock()
		resp := &admissionv1.AdmissionResponse{UID: in.Request.UID, Allowed: true}
		decide(in.Request, resp)
		out := admissionv1.AdmissionReview{TypeMeta: in.TypeMeta, Response: resp}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/validate", func(w http.ResponseWriter, r *http.Request) {
		review(w, r, func(req *admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse) {
			if strings.HasPrefix(req.Name, forbiddenPrefix) {
				resp.Allowed = false
				resp.Result = &metav1.Status{Code: http.StatusForbidden, Message: "tenant A's webhook denies " + req.Name}
			}
		})
	})
	mux.HandleFunc("/mutate", func(w http.ResponseWriter, r *http.Request) {
		review(w, r, func(req *admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse) {
			var cm corev1.ConfigMap
			if err := json.Unmarshal(req.Object.Raw, &cm); err != nil {
				return
			}
			op := `[{"op":"add","path":"/metadata/labels","value":{"` + mutatedLabel + `":"webhook"}}]`
			if cm.Labels != nil {
				op = `[{"op":"add","path":"/metadata/labels/` + mutatedLabel + `","value":"webhook"}]`
			}
			pt := admissionv1.PatchTypeJSONPatch
			resp.Patch, resp.PatchType = []byte(op), &pt
		})
	})
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)
	seen = func() map[string]bool {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(clusters)
	}
	return srv.URL, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), seen
}

var configMapCreates = admissionregistrationv1.RuleWithOperations{
	Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
	Rule: admissionregistrationv1.Rule{
		APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"},
		Scope: ptr.To(admissionregistrationv1.NamespacedScope),
	},
}

// TestWebhookOfOneWorkspaceDoesNotJudgeAnother: tenant A registers a
// validating and a mutating webhook. They deny and label A's configmaps,
// never B's, and stop acting in A once A deletes them.
func TestWebhookOfOneWorkspaceDoesNotJudgeAnother(t *testing.T) {
	t.Parallel()
	s := sharedShard(t)
	ctx := testContext(t)
	ten := newAdmissionTenants(t, s, "webhook")
	url, ca, seen := tenantWebhook(t)
	sideEffects := admissionregistrationv1.SideEffectClassNone

	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-forbidden"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "deny.tenant-a.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url + "/validate"), CABundle: ca},
			Rules:                   []admissionregistrationv1.RuleWithOperations{configMapCreates},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             &sideEffects,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if _, err := ten.kubeA.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ValidatingWebhookConfiguration in A: %v", err)
	}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "label-all"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "label.tenant-a.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url + "/mutate"), CABundle: ca},
			Rules:                   []admissionregistrationv1.RuleWithOperations{configMapCreates},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             &sideEffects,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if _, err := ten.kubeA.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mwc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create MutatingWebhookConfiguration in A: %v", err)
	}
	// The webhook server stops with the test; A's writes must not fail on it.
	t.Cleanup(func() {
		_ = ten.kubeA.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, mwc.Name, metav1.DeleteOptions{})
		_ = ten.kubeA.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, vwc.Name, metav1.DeleteOptions{})
	})

	eventuallyRejected(t, ten.kubeA, forbiddenPrefix+"a-", "tenant A's webhook denies")
	eventuallyLabeled(t, ten.kubeA, "labeled-", "webhook")
	requireUntouched(ctx, t, ten.kubeB, ten.b, forbiddenPrefix+"in-b")
	if got := seen(); len(got) != 1 || !got[ten.a] {
		t.Errorf("A's webhook reviewed objects of clusters %v, want only A (%s)", got, ten.a)
	}

	// A webhook addressed by service would be called in no cluster's sense
	// (failurePolicy Ignore: silently never): it is refused up front.
	byService := vwc.DeepCopy()
	byService.Name = "by-service"
	byService.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	byService.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{
		Service: &admissionregistrationv1.ServiceReference{Namespace: "default", Name: "hook", Path: ptr.To("/validate")}, CABundle: ca,
	}
	_, err := ten.kubeA.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, byService, metav1.CreateOptions{})
	requireAPIError(t, err, http.StatusUnprocessableEntity, "create webhook configuration addressed by service", "clientConfig.url")

	if err := ten.kubeA.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, vwc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete ValidatingWebhookConfiguration in A: %v", err)
	}
	i := 0
	framework.EventuallyWithin(t, admissionTimeout, func(ctx context.Context) error {
		_, err := tryConfigMap(ctx, ten.kubeA, fmt.Sprintf("%safter-delete-%d", forbiddenPrefix, i))
		i++
		return err
	}, "A's deleted webhook still denies")
}

// denyForbiddenPolicy is a ValidatingAdmissionPolicy denying configmaps
// whose name starts with forbidden-.
func denyForbiddenPolicy(name string) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: configMapCreates}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "!object.metadata.name.startsWith('" + forbiddenPrefix + "')",
				Message:    "tenant A's policy denies forbidden configmaps",
			}},
		},
	}
}

func denyBinding(name, policy string, paramRef *admissionregistrationv1.ParamRef) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy,
			ParamRef:          paramRef,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
}

// TestAdmissionPolicyOfOneWorkspaceDoesNotJudgeAnother: tenant A binds a
// ValidatingAdmissionPolicy. It denies in A, not in B, and its status gets
// A's type-checking result.
func TestAdmissionPolicyOfOneWorkspaceDoesNotJudgeAnother(t *testing.T) {
	t.Parallel()
	s := sharedShard(t)
	ctx := testContext(t)
	ten := newAdmissionTenants(t, s, "vap")
	policies := ten.kubeA.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	if _, err := policies.Create(ctx, denyForbiddenPolicy("deny-forbidden"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ValidatingAdmissionPolicy in A: %v", err)
	}
	if _, err := ten.kubeA.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, denyBinding("deny-forbidden", "deny-forbidden", nil), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ValidatingAdmissionPolicyBinding in A: %v", err)
	}

	eventuallyRejected(t, ten.kubeA, forbiddenPrefix+"a-", "tenant A's policy denies forbidden configmaps")
	requireUntouched(ctx, t, ten.kubeB, ten.b, forbiddenPrefix+"in-b")

	// An expression on a field configmaps do not have: the status
	// controller reports it, typed against A's schemas.
	mistyped := denyForbiddenPolicy("mistyped")
	mistyped.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "object.spec.replicas > 1"}}
	if _, err := policies.Create(ctx, mistyped, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create mistyped ValidatingAdmissionPolicy in A: %v", err)
	}
	var got *admissionregistrationv1.ValidatingAdmissionPolicy
	framework.EventuallyWithin(t, admissionTimeout, func(ctx context.Context) error {
		var err error
		if got, err = policies.Get(ctx, mistyped.Name, metav1.GetOptions{}); err != nil {
			return err
		}
		if got.Status.TypeChecking == nil || got.Status.ObservedGeneration != got.Generation {
			return fmt.Errorf("generation %d, status %+v", got.Generation, got.Status)
		}
		return nil
	}, "status.typeChecking of policy %s never filled", mistyped.Name)
	warnings := got.Status.TypeChecking.ExpressionWarnings
	if len(warnings) != 1 || warnings[0].FieldRef != "spec.validations[0].expression" || !strings.Contains(warnings[0].Warning, "spec") {
		t.Errorf("typeChecking warnings of %s = %+v, want one on spec.validations[0].expression about the missing field spec", mistyped.Name, warnings)
	}
}

// TestAdmissionPolicyParamsAreReadFromTheWorkspaceOfThePolicy: tenants A
// and B bind the same policy with params of the same name; each is judged by
// its own params, and tenant C, which has no params, is denied
// (parameterNotFoundAction Deny) instead of reading another tenant's. The
// policy's author is kcp-admin, not system:masters, so creating a policy
// with paramKind checks the author's read permission on the param kind.
func TestAdmissionPolicyParamsAreReadFromTheWorkspaceOfThePolicy(t *testing.T) {
	t.Parallel()
	s := sharedShard(t)
	ctx := testContext(t)
	ten := newAdmissionTenants(t, s, "params")
	c := s.NewLogicalCluster(t, "params-c")
	kubeC := ten.kubeByName(c)

	forbidden := map[string]string{ten.a: "alpha", ten.b: "beta"}
	for cluster, kube := range map[string]kubernetes.Interface{ten.a: ten.kubeA, ten.b: ten.kubeB, c: kubeC} {
		if name, ok := forbidden[cluster]; ok {
			params := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "limits"}, Data: map[string]string{"forbidden": name}}
			if _, err := kube.CoreV1().ConfigMaps("default").Create(ctx, params, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create params in %s: %v", cluster, err)
			}
		}
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "forbidden-by-params"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				ParamKind:     &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
				FailurePolicy: ptr.To(admissionregistrationv1.Fail),
				MatchConstraints: &admissionregistrationv1.MatchResources{
					ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: configMapCreates}},
				},
				Validations: []admissionregistrationv1.Validation{{
					Expression:        "object.metadata.name != params.data.forbidden",
					MessageExpression: "'the params of this workspace forbid ' + params.data.forbidden",
				}},
			},
		}
		if _, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create ValidatingAdmissionPolicy with paramKind in %s: %v", cluster, err)
		}
		paramRef := &admissionregistrationv1.ParamRef{
			Name: "limits", Namespace: "default",
			ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction),
		}
		if _, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, denyBinding("forbidden-by-params", policy.Name, paramRef), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create binding in %s: %v", cluster, err)
		}
	}

	requireRejected := func(kube kubernetes.Interface, cluster, name, want string) {
		t.Helper()
		framework.EventuallyWithin(t, admissionTimeout, func(ctx context.Context) error {
			if _, err := tryConfigMap(ctx, kube, name); err == nil || !strings.Contains(err.Error(), want) {
				return fmt.Errorf("answered %v", err)
			}
			return nil
		}, "configmap %s in %s: never rejected with %q", name, cluster, want)
	}
	requireRejected(ten.kubeA, ten.a, "alpha", "forbid alpha")
	requireRejected(ten.kubeB, ten.b, "beta", "forbid beta")
	requireRejected(kubeC, c, "gamma", "no params found")
	if _, err := tryConfigMap(ctx, ten.kubeA, "beta"); err != nil {
		t.Errorf("configmap beta in A, which only B's params forbid: %v", err)
	}
	if _, err := tryConfigMap(ctx, ten.kubeB, "alpha"); err != nil {
		t.Errorf("configmap alpha in B, which only A's params forbid: %v", err)
	}
}

// TestMutatingAdmissionPolicyOfOneWorkspaceDoesNotMutateAnother: tenant A
// binds a MutatingAdmissionPolicy that labels configmaps; B's configmaps
// stay as created.
func TestMutatingAdmissionPolicyOfOneWorkspaceDoesNotMutateAnother(t *testing.T) {
	t.Parallel()
	s := sharedShard(t)
	ctx := testContext(t)
	ten := newAdmissionTenants(t, s, "map")
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "label-all"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: configMapCreates}},
			},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			Mutations: []admissionregistrationv1.Mutation{{
				PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{
					Expression: `Object{metadata: Object.metadata{labels: {"` + mutatedLabel + `": "policy"}}}`,
				},
			}},
		},
	}
	if _, err := ten.kubeA.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create MutatingAdmissionPolicy in A: %v", err)
	}
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "label-all"},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: policy.Name},
	}
	if _, err := ten.kubeA.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create MutatingAdmissionPolicyBinding in A: %v", err)
	}

	eventuallyLabeled(t, ten.kubeA, "labeled-", "policy")
	requireUntouched(ctx, t, ten.kubeB, ten.b, "in-b")
}

// TestPolicyWithParamKindByUserWithoutParamReadIsRefusedNotCrashed: a user
// who may create policies but not read the param kind creates a policy with
// paramKind. The shard answers 422 naming the missing permission (it used
// to crash the handler), and accepts the policy once the user may read the
// params.
func TestPolicyWithParamKindByUserWithoutParamReadIsRefusedNotCrashed(t *testing.T) {
	t.Parallel()
	s := sharedShard(t)
	ctx := testContext(t)
	cluster := s.NewLogicalCluster(t, "paramkind")
	admin := kubeClient(t, s, "base", cluster)
	const user = "user-4"
	bindClusterRole(ctx, t, admin, user+"-access", workspaceAccessRole, userSubject(user))
	createClusterRole(ctx, t, admin, "policy-author", rbacv1.PolicyRule{
		APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingadmissionpolicies"}, Verbs: []string{"create", "get", "list"},
	})
	bindClusterRole(ctx, t, admin, "policy-author", "policy-author", userSubject(user))

	policy := denyForbiddenPolicy("with-params")
	policy.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	author := tokenUserClient(t, s, user, cluster)
	var err error
	eventuallyAllowed(ctx, t, "policy author reads policies", func(ctx context.Context) error {
		_, err := author.AdmissionregistrationV1().ValidatingAdmissionPolicies().List(ctx, metav1.ListOptions{})
		return err
	})
	_, err = author.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{})
	requireAPIError(t, err, http.StatusUnprocessableEntity, "create policy with paramKind ConfigMap without read permission on configmaps",
		"spec.paramKind", `"get" permission`)

	createClusterRole(ctx, t, admin, "configmap-reader", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}})
	bindClusterRole(ctx, t, admin, "configmap-reader", "configmap-reader", userSubject(user))
	framework.EventuallyWithin(t, admissionTimeout, func(ctx context.Context) error {
		_, err := author.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{})
		return err
	}, "policy with paramKind never accepted after granting read on configmaps")
}
