package authorization

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/union"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

func decideWith(d authorizer.Decision, reason string) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
		return d, reason, nil
	})
}

func TestAuditAnnotationsNameKCPsStepsAndTheirDecisions(t *testing.T) {
	steps := []union.NamedAuthorizer{
		{AuthorizerName: "workspace-content", Authorizer: auditedStep{step: auditSteps["workspace-content"], Authorizer: decideWith(authorizer.DecisionNoOpinion, "")}},
		{AuthorizerName: "bootstrap", Authorizer: auditedStep{step: auditSteps["bootstrap"], Authorizer: decideWith(authorizer.DecisionNoOpinion, "")}},
		{AuthorizerName: "local", Authorizer: auditedStep{step: auditSteps["local"], Authorizer: decideWith(authorizer.DecisionNoOpinion, "local policy")}},
		{AuthorizerName: "global", Authorizer: auditedStep{step: auditSteps["global"], Authorizer: decideWith(authorizer.DecisionAllow, "global policy")}},
	}
	u, err := union.New(steps...)
	if err != nil {
		t.Fatal(err)
	}
	chain := ForRequests(withAuditAnnotations(u))
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
		"request.auth.kcp.io/05-bootstrap-decision":      "NoOpinion",
		"request.auth.kcp.io/05-bootstrap-reason":        "",
		"request.auth.kcp.io/05-local-decision":          "NoOpinion",
		"request.auth.kcp.io/05-global-decision":         "Allowed",
		"request.auth.kcp.io/05-global-reason":           "global policy",
	} {
		if got[key] != want {
			t.Errorf("%s = %q, want %q", key, got[key], want)
		}
	}

	// Called by anything but the request's authorization (admission, RBAC
	// escalation checks), the chain annotates nothing, as kcp's.
	ctx = audit.WithAuditContext(context.Background())
	if err := audit.AuditContextFrom(ctx).Init(audit.RequestAuditConfig{Level: auditinternal.LevelMetadata}, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := withAuditAnnotations(u).Authorize(ctx, attrs); err != nil {
		t.Fatal(err)
	}
	if got := audit.AuditContextFrom(ctx).GetEventAnnotations(); len(got) != 0 {
		t.Errorf("annotations of a check outside the request's authorization: %v", got)
	}

	// The checks a SubjectAccessReview asks for are kcp's sar.auth.kcp.io.
	req := httptest.NewRequest(http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews", nil)
	ctx = audit.WithAuditContext(genericapirequest.WithRequestInfo(req.Context(), &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: "create", APIGroup: "authorization.k8s.io", APIVersion: "v1", Resource: "subjectaccessreviews"}))
	if err := audit.AuditContextFrom(ctx).Init(audit.RequestAuditConfig{Level: auditinternal.LevelMetadata}, nil); err != nil {
		t.Fatal(err)
	}
	WithSubjectAccessReviewAuditDomain(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		if _, _, err := withAuditAnnotations(u).Authorize(r.Context(), attrs); err != nil {
			t.Fatal(err)
		}
	})).ServeHTTP(httptest.NewRecorder(), req.WithContext(ctx))
	if got := audit.AuditContextFrom(ctx).GetEventAnnotations(); got["sar.auth.kcp.io/05-global-decision"] != "Allowed" {
		t.Errorf("annotations of a SubjectAccessReview's check: %v", got)
	}
}
