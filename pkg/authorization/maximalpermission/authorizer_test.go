package maximalpermission

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/scope"
)

const (
	consumer logicalcluster.Name = "consumer"
	provider logicalcluster.Name = "provider"
	group                        = "widgets.example.io"
)

// grant allows subject (a user or group name) verb on resource[/subresource]
// in cluster.
type grant struct {
	cluster                 logicalcluster.Name
	subject, verb, resource string
}

// fakeRBAC allows what its grants allow, in the cluster of the context,
// and records the requests it judged.
type fakeRBAC struct {
	grants []grant
	err    error
	seen   []judged
}

type judged struct {
	cluster logicalcluster.Name
	attr    authorizer.Attributes
}

func (f *fakeRBAC) authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	cluster, _ := logicalcluster.ClusterFromContext(ctx)
	f.seen = append(f.seen, judged{cluster, a})
	if f.err != nil {
		return authorizer.DecisionNoOpinion, "rbac broke", f.err
	}
	resource := a.GetResource()
	if a.GetSubresource() != "" {
		resource += "/" + a.GetSubresource()
	}
	subjects := append([]string{a.GetUser().GetName()}, a.GetUser().GetGroups()...)
	for _, g := range f.grants {
		for _, s := range subjects {
			if g == (grant{cluster, s, a.GetVerb(), resource}) {
				return authorizer.DecisionAllow, "", nil
			}
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func binding(name string, exportCluster logicalcluster.Name, export string, resources ...string) *apisv1alpha2.APIBinding {
	b := &apisv1alpha2.APIBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{logicalcluster.AnnotationKey: string(consumer)}},
		Spec:       apisv1alpha2.APIBindingSpec{Reference: apisv1alpha2.BindingReference{Export: &apisv1alpha2.ExportBindingReference{Path: "root:org:provider", Name: export}}},
		Status:     apisv1alpha2.APIBindingStatus{APIExportClusterName: string(exportCluster), Phase: apisv1alpha2.APIBindingPhaseBound},
	}
	for _, r := range resources {
		b.Status.BoundResources = append(b.Status.BoundResources, apisv1alpha2.BoundAPIResource{Group: group, Resource: r})
	}
	return b
}

func export(name string, policy *apisv1alpha2.MaximalPermissionPolicy) *apisv1alpha2.APIExport {
	return &apisv1alpha2.APIExport{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{logicalcluster.AnnotationKey: string(provider)}},
		Spec:       apisv1alpha2.APIExportSpec{MaximalPermissionPolicy: policy},
	}
}

var local = &apisv1alpha2.MaximalPermissionPolicy{Local: &apisv1alpha2.LocalAPIExportPolicy{}}

func request(u user.Info, verb, resource, subresource string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{User: u, Verb: verb, Namespace: "default", APIGroup: group, APIVersion: "v1",
		Resource: resource, Subresource: subresource, ResourceRequest: true}
}

func TestPolicyOfTheExportBoundsBoundResources(t *testing.T) {
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"team", user.AllAuthenticated}}
	limited := binding("widgets", provider, "limited", "widgets")
	exports := map[string]*apisv1alpha2.APIExport{
		"limited":   export("limited", local),
		"open":      export("open", nil),
		"no-local":  export("no-local", &apisv1alpha2.MaximalPermissionPolicy{}),
		"limited-2": export("limited-2", local),
	}
	for _, tc := range []struct {
		name     string
		bindings []*apisv1alpha2.APIBinding
		lookup   error
		grants   []grant
		rbacErr  error
		cluster  logicalcluster.Name
		attr     authorizer.AttributesRecord
		want     authorizer.Decision
		// reason must contain these; wantErr tells whether an error is
		// returned.
		reason  []string
		wantErr bool
		// judged tells whether the export's RBAC was asked.
		judged bool
	}{
		{name: "allowed by the prefixed user: the consumer's RBAC decides next",
			bindings: []*apisv1alpha2.APIBinding{limited},
			grants:   []grant{{provider, Prefix + "alice", "list", "widgets"}},
			attr:     request(alice, "list", "widgets", ""), want: authorizer.DecisionNoOpinion, judged: true},
		{name: "allowed by a prefixed group",
			bindings: []*apisv1alpha2.APIBinding{limited},
			grants:   []grant{{provider, Prefix + user.AllAuthenticated, "create", "widgets"}},
			attr:     request(alice, "create", "widgets", ""), want: authorizer.DecisionNoOpinion, judged: true},
		{name: "a verb the policy does not grant is denied, naming the export",
			bindings: []*apisv1alpha2.APIBinding{limited},
			grants:   []grant{{provider, Prefix + "alice", "list", "widgets"}},
			attr:     request(alice, "create", "widgets", ""), want: authorizer.DecisionDeny, judged: true,
			reason: []string{"APIExport provider:limited", "maximal permission policy", "widgets." + group}},
		{name: "an unprefixed grant in the export's cluster does not count",
			bindings: []*apisv1alpha2.APIBinding{limited},
			grants:   []grant{{provider, "alice", "create", "widgets"}, {provider, user.AllAuthenticated, "create", "widgets"}},
			attr:     request(alice, "create", "widgets", ""), want: authorizer.DecisionDeny, judged: true},
		{name: "a prefixed grant in the consumer's cluster does not count",
			bindings: []*apisv1alpha2.APIBinding{limited},
			grants:   []grant{{consumer, Prefix + "alice", "create", "widgets"}},
			attr:     request(alice, "create", "widgets", ""), want: authorizer.DecisionDeny, judged: true},
		{name: "a subresource needs its own grant",
			bindings: []*apisv1alpha2.APIBinding{limited},
			grants:   []grant{{provider, Prefix + "alice", "update", "widgets"}},
			attr:     request(alice, "update", "widgets", "status"), want: authorizer.DecisionDeny, judged: true,
			reason: []string{"widgets/status." + group}},
		{name: "a granted subresource",
			bindings: []*apisv1alpha2.APIBinding{limited},
			grants:   []grant{{provider, Prefix + "alice", "update", "widgets/status"}},
			attr:     request(alice, "update", "widgets", "status"), want: authorizer.DecisionNoOpinion, judged: true},
		{name: "a resource no binding serves is not judged",
			bindings: nil,
			attr:     request(alice, "create", "widgets", ""), want: authorizer.DecisionNoOpinion},
		{name: "an export without a policy is not judged",
			bindings: []*apisv1alpha2.APIBinding{binding("widgets", provider, "open", "widgets")},
			attr:     request(alice, "create", "widgets", ""), want: authorizer.DecisionNoOpinion},
		{name: "an export with a policy that is not local is not judged",
			bindings: []*apisv1alpha2.APIBinding{binding("widgets", provider, "no-local", "widgets")},
			attr:     request(alice, "create", "widgets", ""), want: authorizer.DecisionNoOpinion},
		{name: "a missing export denies",
			bindings: []*apisv1alpha2.APIBinding{binding("widgets", provider, "gone", "widgets")},
			attr:     request(alice, "get", "widgets", ""), want: authorizer.DecisionDeny,
			reason: []string{"APIExport provider:gone", "not found"}},
		{name: "a binding whose export is not resolved denies",
			bindings: []*apisv1alpha2.APIBinding{binding("widgets", "", "limited", "widgets")},
			attr:     request(alice, "get", "widgets", ""), want: authorizer.DecisionDeny,
			reason: []string{"APIBinding widgets", "not resolved"}},
		{name: "bindings that cannot be read deny",
			lookup: errors.New("boom"),
			attr:   request(alice, "get", "widgets", ""), want: authorizer.DecisionDeny, wantErr: true},
		{name: "an RBAC error denies",
			bindings: []*apisv1alpha2.APIBinding{limited},
			rbacErr:  errors.New("boom"),
			attr:     request(alice, "get", "widgets", ""), want: authorizer.DecisionDeny, wantErr: true, judged: true,
			reason: []string{"APIExport provider:limited", "rbac broke"}},
		{name: "every binding of the resource must allow",
			bindings: []*apisv1alpha2.APIBinding{limited, binding("widgets-2", provider, "limited-2", "widgets")},
			grants:   []grant{{provider, Prefix + "alice", "get", "widgets"}},
			attr:     request(alice, "get", "widgets", ""), want: authorizer.DecisionNoOpinion, judged: true},
		{name: "non-resource requests are not judged",
			bindings: []*apisv1alpha2.APIBinding{limited},
			attr:     authorizer.AttributesRecord{User: alice, Verb: "get", Path: "/apis/" + group}, want: authorizer.DecisionNoOpinion},
		{name: "requests outside a logical cluster are not judged",
			bindings: []*apisv1alpha2.APIBinding{limited}, cluster: "-",
			attr: request(alice, "create", "widgets", ""), want: authorizer.DecisionNoOpinion},
		{name: "wildcard requests are left to the wildcard guard",
			bindings: []*apisv1alpha2.APIBinding{limited}, cluster: logicalcluster.Wildcard,
			attr: request(alice, "create", "widgets", ""), want: authorizer.DecisionNoOpinion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rbac := &fakeRBAC{grants: tc.grants, err: tc.rbacErr}
			var asked []string
			a := New(
				func(cluster logicalcluster.Name, g, r string) ([]*apisv1alpha2.APIBinding, error) {
					asked = append(asked, string(cluster)+"|"+g+"|"+r)
					return tc.bindings, tc.lookup
				},
				func(cluster logicalcluster.Name, name string) (*apisv1alpha2.APIExport, error) {
					if cluster != provider {
						return nil, nil
					}
					return exports[name], nil
				},
				authorizer.AuthorizerFunc(rbac.authorize),
			)
			ctx := context.Background()
			switch tc.cluster {
			case "":
				ctx = logicalcluster.WithCluster(ctx, consumer)
			case "-":
			default:
				ctx = logicalcluster.WithCluster(ctx, tc.cluster)
			}
			d, reason, err := a.Authorize(ctx, tc.attr)
			if d != tc.want || (err != nil) != tc.wantErr {
				t.Fatalf("got %v %q %v, want %v (error: %v)", d, reason, err, tc.want, tc.wantErr)
			}
			for _, s := range tc.reason {
				if !strings.Contains(reason, s) {
					t.Errorf("reason %q does not mention %q", reason, s)
				}
			}
			if (len(rbac.seen) > 0) != tc.judged {
				t.Fatalf("export RBAC asked %d times, want asked: %v", len(rbac.seen), tc.judged)
			}
			for _, j := range rbac.seen {
				if j.cluster != provider {
					t.Errorf("export RBAC judged in %q, want the export's cluster %q", j.cluster, provider)
				}
				if got := j.attr.GetUser().GetName(); got != Prefix+"alice" {
					t.Errorf("export RBAC judged user %q", got)
				}
				if j.attr.GetVerb() != tc.attr.Verb || j.attr.GetResource() != tc.attr.Resource || j.attr.GetSubresource() != tc.attr.Subresource ||
					j.attr.GetNamespace() != tc.attr.Namespace || j.attr.GetAPIGroup() != group {
					t.Errorf("export RBAC judged %+v, want the request %+v with a prefixed user", j.attr, tc.attr)
				}
			}
			if tc.attr.ResourceRequest && tc.cluster == "" && !reflect.DeepEqual(asked, []string{string(consumer) + "|" + group + "|" + tc.attr.Resource}) {
				t.Errorf("bindings looked up for %v, want the request's cluster, group and resource", asked)
			}
		})
	}
}

func TestPrefixedUser(t *testing.T) {
	warrant := map[string][]string{scope.WarrantExtraKey: {`{"user":"bob"}`}, "other": {"x"}}
	for _, tc := range []struct {
		name string
		user user.Info
		want *user.DefaultInfo
	}{
		{"user and every group are prefixed; warrants are left to the chain",
			&user.DefaultInfo{Name: "alice", UID: "u1", Groups: []string{"team", user.AllAuthenticated}, Extra: warrant},
			&user.DefaultInfo{Name: Prefix + "alice", UID: "u1", Groups: []string{Prefix + "team", Prefix + user.AllAuthenticated}, Extra: map[string][]string{"other": {"x"}}}},
		{"a user of system groups",
			&user.DefaultInfo{Name: "kcp-admin", Groups: []string{"system:kcp:admin"}},
			&user.DefaultInfo{Name: Prefix + "kcp-admin", Groups: []string{Prefix + "system:kcp:admin"}}},
		{"a service account is named with its cluster",
			&user.DefaultInfo{Name: "system:serviceaccount:ns:sa", Groups: []string{"system:serviceaccounts"}, Extra: map[string][]string{scope.ServiceAccountClusterExtraKey: {"home"}}},
			&user.DefaultInfo{Name: Prefix + "system:kcp:serviceaccount:home:ns:sa", Groups: []string{Prefix + "system:serviceaccounts"}, Extra: map[string][]string{scope.ServiceAccountClusterExtraKey: {"home"}}}},
		{"a service account without a cluster is of the request's cluster",
			&user.DefaultInfo{Name: "system:serviceaccount:ns:sa"},
			&user.DefaultInfo{Name: Prefix + "system:kcp:serviceaccount:consumer:ns:sa", Groups: []string{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PrefixedUser(tc.user, consumer); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
