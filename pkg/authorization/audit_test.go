package authorization

import (
	"context"
	"testing"

	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/union"
)

func decideWith(d authorizer.Decision, reason string) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
		return d, reason, nil
	})
}

func TestAuditAnnotationsNameKCPsStepsAndTheirDecisions(t *testing.T) {
	steps := []union.NamedAuthorizer{
		{AuthorizerName: "workspace-content", Authorizer: auditedStep{step: auditSteps["workspace-content"], Authorizer: decideWith(authorizer.DecisionNoOpinion, "")}},
		{AuthorizerName: "kcp-admin", Authorizer: auditedStep{step: auditSteps["kcp-admin"], Authorizer: decideWith(authorizer.DecisionAllow, "admin")}},
		{AuthorizerName: "rbac", Authorizer: auditedStep{step: auditSteps["rbac"], Authorizer: decideWith(authorizer.DecisionDeny, "never asked")}},
	}
	u, err := union.New(steps...)
	if err != nil {
		t.Fatal(err)
	}
	chain := withAuditAnnotations(u)
	attrs := authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "alice"}, Verb: "list", Resource: "configmaps", ResourceRequest: true}

	// Not audited: nothing is recorded.
	ctx := audit.WithAuditContext(context.Background())
	if d, _, _ := chain.Authorize(ctx, attrs); d != authorizer.DecisionAllow {
		t.Fatalf("decision %v, want allow", d)
	}
	if got := audit.AuditContextFrom(ctx).GetEventAnnotations(); len(got) != 0 {
		t.Errorf("annotations of a request the policy does not log: %v", got)
	}

	ctx = audit.WithAuditContext(context.Background())
	if err := audit.AuditContextFrom(ctx).Init(audit.RequestAuditConfig{Level: auditinternal.LevelMetadata}, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := chain.Authorize(ctx, attrs); err != nil {
		t.Fatal(err)
	}
	got := audit.AuditContextFrom(ctx).GetEventAnnotations()
	for key, want := range map[string]string{
		// Chained steps report the chain's decision from them on, as kcp's.
		"request.auth.kcp.io/01-requiredgroups-decision": "Allowed",
		"request.auth.kcp.io/02-content-decision":        "Allowed",
		"request.auth.kcp.io/05-bootstrap-decision":      "Allowed",
		"request.auth.kcp.io/05-bootstrap-reason":        "admin",
	} {
		if got[key] != want {
			t.Errorf("%s = %q, want %q", key, got[key], want)
		}
	}
	if _, ok := got["request.auth.kcp.io/05-local-decision"]; ok {
		t.Errorf("a step that did not run is annotated: %v", got)
	}
}
