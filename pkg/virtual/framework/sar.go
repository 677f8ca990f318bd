package framework

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// Decisions are kept this long, so that a controller's requests through a
// view cost one review every few seconds, not one each.
const (
	allowedTTL = 10 * time.Second
	deniedTTL  = time.Second
)

// SubjectAccessReviews authorizes by SubjectAccessReviews in the logical
// cluster of the request's context (logicalcluster.WithCluster), posted to
// /clusters/<cluster>/apis/authorization.k8s.io/v1/subjectaccessreviews of
// a server that reaches that cluster: the shard, or a front-proxy that
// reaches every shard. Its credentials must be allowed to create
// SubjectAccessReviews there.
type SubjectAccessReviews struct {
	client rest.Interface
	now    func() time.Time

	mu    sync.Mutex
	cache map[string]cachedDecision
}

type cachedDecision struct {
	decision authorizer.Decision
	reason   string
	expires  time.Time
}

// NewSubjectAccessReviews returns an authorizer posting reviews with
// config (its host is the base URL, without /clusters/).
func NewSubjectAccessReviews(config *rest.Config) (*SubjectAccessReviews, error) {
	cs, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	return &SubjectAccessReviews{client: cs.AuthorizationV1().RESTClient(), now: time.Now, cache: map[string]cachedDecision{}}, nil
}

// Authorize implements authorizer.Authorizer.
func (s *SubjectAccessReviews) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	cluster, ok := logicalcluster.ClusterFromContext(ctx)
	if !ok || cluster == "" || cluster.IsWildcard() {
		return authorizer.DecisionDeny, "no logical cluster to authorize in", nil
	}
	review := reviewOf(a)
	key := cacheKey(cluster, review)
	now := s.now()
	s.mu.Lock()
	if d, ok := s.cache[key]; ok && now.Before(d.expires) {
		s.mu.Unlock()
		return d.decision, d.reason, nil
	}
	s.mu.Unlock()

	out := &authorizationv1.SubjectAccessReview{}
	err := s.client.Post().AbsPath(cluster.RequestPath(), "apis/authorization.k8s.io/v1/subjectaccessreviews").Body(review).Do(ctx).Into(out)
	if err != nil {
		return authorizer.DecisionNoOpinion, "", fmt.Errorf("subject access review in %s: %w", cluster, err)
	}
	d := cachedDecision{decision: authorizer.DecisionNoOpinion, reason: out.Status.Reason, expires: now.Add(deniedTTL)}
	switch {
	case out.Status.Allowed:
		d.decision, d.expires = authorizer.DecisionAllow, now.Add(allowedTTL)
	case out.Status.Denied:
		d.decision = authorizer.DecisionDeny
	}
	s.mu.Lock()
	if len(s.cache) > 10000 {
		for k, v := range s.cache {
			if !now.Before(v.expires) {
				delete(s.cache, k)
			}
		}
	}
	s.cache[key] = d
	s.mu.Unlock()
	return d.decision, d.reason, nil
}

func reviewOf(a authorizer.Attributes) *authorizationv1.SubjectAccessReview {
	r := &authorizationv1.SubjectAccessReview{}
	r.APIVersion, r.Kind = "authorization.k8s.io/v1", "SubjectAccessReview"
	if u := a.GetUser(); u != nil {
		r.Spec.User, r.Spec.UID, r.Spec.Groups = u.GetName(), u.GetUID(), u.GetGroups()
		if extra := u.GetExtra(); len(extra) > 0 {
			r.Spec.Extra = map[string]authorizationv1.ExtraValue{}
			for k, v := range extra {
				r.Spec.Extra[k] = v
			}
		}
	}
	if a.IsResourceRequest() {
		r.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Namespace: a.GetNamespace(), Verb: a.GetVerb(), Group: a.GetAPIGroup(), Version: a.GetAPIVersion(),
			Resource: a.GetResource(), Subresource: a.GetSubresource(), Name: a.GetName(),
		}
	} else {
		r.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: a.GetPath(), Verb: a.GetVerb()}
	}
	return r
}

func cacheKey(cluster logicalcluster.Name, r *authorizationv1.SubjectAccessReview) string {
	groups := append([]string(nil), r.Spec.Groups...)
	sort.Strings(groups)
	var extra []string
	for k, v := range r.Spec.Extra {
		extra = append(extra, k+"="+strings.Join(v, ","))
	}
	sort.Strings(extra)
	var attrs string
	if ra := r.Spec.ResourceAttributes; ra != nil {
		attrs = fmt.Sprintf("%+v", *ra)
	}
	if na := r.Spec.NonResourceAttributes; na != nil {
		attrs += fmt.Sprintf("%+v", *na)
	}
	return strings.Join([]string{string(cluster), r.Spec.User, r.Spec.UID, strings.Join(groups, ","), strings.Join(extra, ";"), attrs}, "\x00")
}

// ConditionsAwareAuthorize converts the unconditional decision.
func (s *SubjectAccessReviews) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(s.Authorize(ctx, a))
}

// EvaluateConditions is not supported.
func (*SubjectAccessReviews) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}
