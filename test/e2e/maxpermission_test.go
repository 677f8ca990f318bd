package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/test/framework"
)

// policyPrefix prefixes the subjects of a maximal permission policy.
const policyPrefix = apisv1alpha1.MaximalPermissionPolicyRBACUserGroupPrefix

// maxPermissionSetup is a provider workspace exporting widgets of a group
// of its own with a local maximal permission policy, and a consumer
// workspace that binds them, where user-1 may do everything with widgets.
// The provider's policy lets user-1 only get and list them.
type maxPermissionSetup struct {
	provider, consumer ws
	// gvr is the bound resource; policy the provider's ClusterRole that
	// user-1's prefixed name is bound to.
	gvr    schema.GroupVersionResource
	policy string
}

func setUpMaxPermission(ctx context.Context, t *testing.T, e *wsEnv, prefix string) maxPermissionSetup {
	t.Helper()
	kcp := e.kcp(t, kcpAdmin)
	org := e.readyOrg(ctx, t, prefix)
	s := maxPermissionSetup{
		provider: readyWorkspace(ctx, t, kcp, org.path(), "provider", nil),
		consumer: readyWorkspace(ctx, t, kcp, org.path(), "consumer", nil),
		gvr:      schema.GroupVersionResource{Group: "widgets." + uniqueName("g") + ".io", Version: "v1", Resource: "widgets"},
		policy:   "widgets-policy",
	}

	schemaName := "v1.widgets." + s.gvr.Group
	rs := widgetSchema(schemaName)
	rs.Spec.Group = s.gvr.Group
	rs.Spec.Versions[0].Subresources.Status = &apiextensionsv1.CustomResourceSubresourceStatus{}
	if err := kcp.create(ctx, s.provider.path(), apiResourceSchemasGVR, rs, &apisv1alpha1.APIResourceSchema{}); err != nil {
		t.Fatalf("create APIResourceSchema: %v", err)
	}
	export := &apisv1alpha2.APIExport{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport"},
		ObjectMeta: metav1.ObjectMeta{Name: "widgets"},
		Spec: apisv1alpha2.APIExportSpec{
			Resources:               []apisv1alpha2.ResourceSchema{{Name: "widgets", Group: s.gvr.Group, Schema: schemaName}},
			MaximalPermissionPolicy: &apisv1alpha2.MaximalPermissionPolicy{Local: &apisv1alpha2.LocalAPIExportPolicy{}},
		},
	}
	if err := kcp.create(ctx, s.provider.path(), apiExportsGVR, export, &apisv1alpha2.APIExport{}); err != nil {
		t.Fatalf("create APIExport: %v", err)
	}
	waitForIdentity(t, kcp, s.provider.path(), "widgets", corev1.ConditionTrue)

	// The policy: user-1 may get and list widgets in any consumer.
	providerAdmin := e.kube(t, kcpAdmin, s.provider.path())
	createClusterRole(ctx, t, providerAdmin, s.policy,
		rbacv1.PolicyRule{APIGroups: []string{s.gvr.Group}, Resources: []string{"widgets"}, Verbs: []string{"get", "list"}})
	bindClusterRole(ctx, t, providerAdmin, s.policy, s.policy, userSubject(policyPrefix+"user-1"))

	// The consumer binds the export and gives user-1 every right on widgets.
	if err := kcp.create(ctx, s.consumer.path(), apiBindingsGVR, bindingTo("widgets", s.provider.path(), "widgets"), &apisv1alpha2.APIBinding{}); err != nil {
		t.Fatalf("create APIBinding: %v", err)
	}
	waitForBinding(t, kcp, s.consumer.path(), "widgets", "Bound", bound)
	consumerAdmin := e.kube(t, kcpAdmin, s.consumer.path())
	createClusterRole(ctx, t, consumerAdmin, "widgets-all",
		rbacv1.PolicyRule{APIGroups: []string{s.gvr.Group}, Resources: []string{"widgets", "widgets/status"}, Verbs: []string{"*"}})
	bindClusterRole(ctx, t, consumerAdmin, "user-1-access", workspaceAccessRole, userSubject("user-1"))
	bindClusterRole(ctx, t, consumerAdmin, "user-1-widgets", "widgets-all", userSubject("user-1"))
	return s
}

// policyDenial is what a denial by the provider's policy says.
func (s maxPermissionSetup) policyDenial() []string {
	return []string{"maximal permission policy", "APIExport " + s.provider.cluster() + ":widgets"}
}

// allowCreate extends the provider's policy to creating widgets.
func (s maxPermissionSetup) allowCreate(ctx context.Context, t *testing.T, e *wsEnv) {
	t.Helper()
	roles := e.kube(t, kcpAdmin, s.provider.path()).RbacV1().ClusterRoles()
	role, err := roles.Get(ctx, s.policy, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get ClusterRole %s: %v", s.policy, err)
	}
	role.Rules[0].Verbs = append(role.Rules[0].Verbs, "create")
	if _, err := roles.Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update ClusterRole %s: %v", s.policy, err)
	}
}

// TestMaximalPermissionPolicyLimitsBoundResources: a provider exports
// widgets with a local maximal permission policy that lets user-1 only
// read them. In a consumer workspace where RBAC gives user-1 every right on
// widgets, user-1 lists them but creating one is refused with 403 naming
// the export; once the provider's policy allows creating, user-1 creates.
func TestMaximalPermissionPolicyLimitsBoundResources(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaceEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := setUpMaxPermission(ctx, t, e, "maxperm")
	if _, err := e.kube(t, kcpAdmin, s.consumer.path()).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace default: %v", err)
	}
	dyn, err := dynamic.NewForConfig(e.config(t, "user-1", s.consumer.path()))
	if err != nil {
		t.Fatal(err)
	}
	widgets := dyn.Resource(s.gvr).Namespace("default")
	newWidget := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": s.gvr.GroupVersion().String(), "kind": "Widget",
			"metadata": map[string]interface{}{"name": name},
			"spec":     map[string]interface{}{"size": int64(1)},
		}}
	}

	// Serving the bound resource and the RBAC caches catch up
	// asynchronously: wait until user-1 lists.
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		_, err := widgets.List(ctx, metav1.ListOptions{})
		return err
	}, "user-1 never listed widgets in %s", s.consumer.path())

	_, err = widgets.Create(ctx, newWidget("refused"), metav1.CreateOptions{})
	requireAPIError(t, err, 403, "create a widget beyond the provider's policy", s.policyDenial()...)

	s.allowCreate(ctx, t, e)
	eventuallyAllowed(ctx, t, "create a widget once the policy allows it", func(ctx context.Context) error {
		_, err := widgets.Create(ctx, newWidget("allowed"), metav1.CreateOptions{})
		return err
	})
	obj, err := widgets.Get(ctx, "allowed", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get the created widget: %v", err)
	}
	// A subresource is judged on its own: the consumer's RBAC allows
	// widgets/status, the policy does not name it.
	_, err = widgets.UpdateStatus(ctx, obj, metav1.UpdateOptions{})
	requireAPIError(t, err, 403, "update the status of a widget", s.policyDenial()...)
}

// TestMaximalPermissionPolicyAnswersAccessReviews: `kubectl auth can-i`
// (SelfSubjectAccessReview) answers as requests are judged: in the
// consumer, user-1 may list widgets but not create them, whatever the
// consumer's RBAC says, until the provider's policy allows; kcp-admin is
// bound by the policy too, system:masters is not.
func TestMaximalPermissionPolicyAnswersAccessReviews(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaceEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := setUpMaxPermission(ctx, t, e, "maxperm-sar")

	review := func(ctx context.Context, who, verb string) (*authorizationv1.SubjectAccessReviewStatus, error) {
		r, err := e.kube(t, who, s.consumer.path()).AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: "default", Verb: verb, Group: s.gvr.Group, Version: s.gvr.Version, Resource: s.gvr.Resource}},
		}, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		return &r.Status, nil
	}
	// eventually waits until who's review of verb says allowed.
	eventually := func(who, verb string, allowed bool) *authorizationv1.SubjectAccessReviewStatus {
		t.Helper()
		var last *authorizationv1.SubjectAccessReviewStatus
		var lastErr error
		err := wait.PollUntilContextTimeout(ctx, wsPoll, wsTimeout, true, func(ctx context.Context) (bool, error) {
			last, lastErr = review(ctx, who, verb)
			return lastErr == nil && last.Allowed == allowed, nil
		})
		if err != nil {
			t.Fatalf("%s may %s widgets: never %v (last %+v, error %v)", who, verb, allowed, last, lastErr)
		}
		return last
	}

	eventually("user-1", "list", true)
	denied := eventually("user-1", "create", false)
	if !denied.Denied {
		t.Errorf("create: status %+v, want denied", denied)
	}
	for _, want := range s.policyDenial() {
		if !strings.Contains(denied.Reason, want) {
			t.Errorf("create: reason %q does not mention %q", denied.Reason, want)
		}
	}
	if st := eventually(kcpAdmin, "get", false); !strings.Contains(st.Reason, "maximal permission policy") {
		t.Errorf("kcp-admin get: reason %q does not name the policy", st.Reason)
	}
	eventually(shardAdmin, "create", true)

	s.allowCreate(ctx, t, e)
	eventually("user-1", "create", true)
}
