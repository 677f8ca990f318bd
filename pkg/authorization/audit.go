package authorization

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// The audit annotation domains of kcp's authorizer steps: the request's
// own authorization, and the checks a SubjectAccessReview asks for.
const (
	requestAuditDomain = "request.auth.kcp.io"
	sarAuditDomain     = "sar.auth.kcp.io"
)

// kcp's decision strings in audit annotations.
const (
	auditDecisionAllowed   = "Allowed"
	auditDecisionDenied    = "Denied"
	auditDecisionNoOpinion = "NoOpinion"
)

// auditStep names a step of the chain in kcp's audit annotations
// (<domain>/<key>-decision and -reason). kcp nests its steps, each one
// deciding for itself and everything after it; chained steps report the
// chain's decision from there on, as kcp's do, leaves their own.
type auditStep struct {
	keys    []string
	chained bool
}

// auditSteps maps the chain's named authorizers to kcp's keys: the
// workspace content authorizer also checks the required groups.
var auditSteps = map[string]auditStep{
	"workspace-content":         {keys: []string{"01-requiredgroups", "02-content"}, chained: true},
	"system-crd":                {keys: []string{"03-systemcrd"}, chained: true},
	"maximal-permission-policy": {keys: []string{"04-maxpermissionpolicy"}, chained: true},
	"bootstrap":                 {keys: []string{"05-bootstrap"}},
	"local":                     {keys: []string{"05-local"}},
	"global":                    {keys: []string{"05-global"}},
}

// auditRecord is what the steps of one authorization decided, in order.
type auditRecord struct {
	mu    sync.Mutex
	steps []recordedStep
	done  bool
}

type recordedStep struct {
	step     auditStep
	decision authorizer.Decision
	reason   string
	err      error
}

type auditRecordKey struct{}

// auditedStep records the decision of a named step of the chain for the
// audit annotations, the first time it runs in an authorization (later
// runs are for the identity's warrants).
type auditedStep struct {
	step auditStep
	authorizer.Authorizer
}

func (s auditedStep) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	d, reason, err := s.Authorizer.Authorize(ctx, a)
	if rec, ok := ctx.Value(auditRecordKey{}).(*auditRecord); ok {
		rec.mu.Lock()
		if !rec.done {
			rec.steps = append(rec.steps, recordedStep{step: s.step, decision: d, reason: reason, err: err})
		}
		rec.mu.Unlock()
	}
	return d, reason, err
}

type auditDomainKey struct{}

// ForRequests returns authz annotating the audit event of the request it
// authorizes under kcp's request.auth.kcp.io. As in kcp, only the request's
// own authorization is annotated so: the same chain called by admission,
// RBAC escalation checks or the views writes nothing.
func ForRequests(authz authorizer.Authorizer) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		return authz.Authorize(context.WithValue(ctx, auditDomainKey{}, requestAuditDomain), a)
	})
}

// WithSubjectAccessReviewAuditDomain tags a SubjectAccessReview (after
// its own authorization) so that the checks it asks for are annotated
// under kcp's sar.auth.kcp.io.
func WithSubjectAccessReviewAuditDomain(handler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ri, ok := genericapirequest.RequestInfoFrom(r.Context())
		if ok && ri.IsResourceRequest && ri.APIGroup == authorizationv1.GroupName && ri.Resource == "subjectaccessreviews" && ri.Verb == "create" {
			r = r.WithContext(context.WithValue(r.Context(), auditDomainKey{}, sarAuditDomain))
		}
		handler.ServeHTTP(w, r)
	})
}

func (s auditedStep) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(s.Authorize(ctx, a))
}

// withAuditAnnotations annotates the request's audit event with the
// decision of each step that ran, under kcp's keys and the domain the
// context names (ForRequests, WithSubjectAccessReviewAuditDomain), so that
// an audit log says which step allowed or denied a request and why, as
// kcp's does.
func withAuditAnnotations(chain authorizer.Authorizer) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		domain, _ := ctx.Value(auditDomainKey{}).(string)
		// Only a request the audit policy logs (its level is set then) is
		// annotated: without auditing the records would go nowhere.
		if ac := audit.AuditContextFrom(ctx); domain == "" || ac == nil || !ac.Enabled() || ac.GetEventLevel() == "" {
			return chain.Authorize(ctx, a)
		}
		rec := &auditRecord{}
		d, reason, err := chain.Authorize(context.WithValue(ctx, auditRecordKey{}, rec), a)
		rec.mu.Lock()
		rec.done = true
		steps := rec.steps
		rec.mu.Unlock()
		for _, s := range steps {
			decision, why, stepErr := s.decision, s.reason, s.err
			if s.step.chained {
				decision, why, stepErr = d, reason, err
			}
			if stepErr != nil {
				why = fmt.Sprintf("reason: %v, error: %v", why, stepErr)
			}
			for _, key := range s.step.keys {
				audit.AddAuditAnnotations(ctx,
					domain+"/"+key+"-decision", auditDecisionString(decision),
					domain+"/"+key+"-reason", why)
			}
		}
		return d, reason, err
	})
}

func auditDecisionString(d authorizer.Decision) string {
	switch d {
	case authorizer.DecisionAllow:
		return auditDecisionAllowed
	case authorizer.DecisionDeny:
		return auditDecisionDenied
	default:
		return auditDecisionNoOpinion
	}
}
