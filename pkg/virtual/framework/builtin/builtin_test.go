package builtin

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

type recordingAuthorizer struct {
	cluster logicalcluster.Name
	attrs   authorizer.Attributes
}

func (r *recordingAuthorizer) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	r.cluster, _ = logicalcluster.ClusterFromContext(ctx)
	r.attrs = a
	return authorizer.DecisionAllow, "", nil
}

func (r *recordingAuthorizer) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(r.Authorize(ctx, a))
}

func (*recordingAuthorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

func TestTypeAuthorizerChecksTheVerbOnTheTypeInItsResolvedWorkspace(t *testing.T) {
	rec := &recordingAuthorizer{}
	resolve := func(p logicalcluster.Path) (logicalcluster.Name, bool) { return "org-cluster", p == "root:org" }
	authorize := typeAuthorizer(rec, resolve)
	u := &user.DefaultInfo{Name: "alice"}
	ok, _, err := authorize(context.Background(), u, "initialize", "root:org", "team")
	if err != nil || !ok {
		t.Fatalf("allowed %v, err %v", ok, err)
	}
	if rec.cluster != "org-cluster" || rec.attrs.GetVerb() != "initialize" || rec.attrs.GetResource() != "workspacetypes" || rec.attrs.GetName() != "team" {
		t.Errorf("asked in %s for %+v", rec.cluster, rec.attrs)
	}
	if ok, _, _ := authorize(context.Background(), u, "initialize", "root:unknown", "team"); ok {
		t.Errorf("a type in an unknown workspace is allowed")
	}
	if ok, _, _ := authorize(context.Background(), u, "initialize", "root", "universal"); !ok || rec.cluster != "root" {
		t.Errorf("a type in root: allowed %v in %s", ok, rec.cluster)
	}
}

func TestNewMountsEveryView(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	m, err := New(Config{Shard: &rest.Config{Host: srv.URL}, Authorizer: &recordingAuthorizer{}, AuthorizationConfig: &rest.Config{Host: srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"apiexport", "initializingworkspaces", "terminatingworkspaces"} {
		if m.Views[name] == nil {
			t.Errorf("view %s is not mounted", name)
		}
	}
	if len(m.Informers) != 1 {
		t.Errorf("%d informers, want the APIBindings informer", len(m.Informers))
	}
	// An unknown view answers 404.
	rw := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/services/nope/x", nil)
	m.Views.ServeHTTP(rw, req.WithContext(apirequest.WithUser(req.Context(), &user.DefaultInfo{Name: "a"})))
	if rw.Code != http.StatusNotFound {
		t.Errorf("unknown view: %d", rw.Code)
	}
}
