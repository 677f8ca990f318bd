package initializingworkspaces

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/rest"

	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// How long a SubjectAccessReview's answer is reused: a controller's list,
// watch and writes cost one review, and a revoked right stops working
// within allowedTTL; a refusal is asked again soon, as a right granted
// moments ago reaches the authorizer's caches.
const (
	allowedTTL = 10 * time.Second
	deniedTTL  = time.Second
)

// maxDecisions bounds the cache; it is emptied when full.
const maxDecisions = 4096

// accessReviewer asks the server of a WorkspaceType's workspace whether a
// user may initialize (terminate) workspaces of the type.
type accessReviewer struct {
	server *shardClient
	now    func() time.Time

	mu        sync.Mutex
	decisions map[string]decision
}

type decision struct {
	allowed bool
	reason  string
	expires time.Time
}

func newAccessReviewer(cfg *rest.Config) (*accessReviewer, error) {
	if cfg == nil || cfg.Host == "" {
		return nil, fmt.Errorf("the authorization config has no host")
	}
	server, err := newShardClient(cfg)
	if err != nil {
		return nil, err
	}
	return &accessReviewer{server: server, now: time.Now, decisions: map[string]decision{}}, nil
}

// authorize implements Config.Authorize with a SubjectAccessReview in the
// type's workspace.
func (a *accessReviewer) authorize(ctx context.Context, u user.Info, verb string, typeCluster logicalcluster.Path, typeName string) (bool, string, error) {
	key := decisionKey(u, verb, typeCluster, typeName)
	a.mu.Lock()
	d, ok := a.decisions[key]
	a.mu.Unlock()
	if ok && a.now().Before(d.expires) {
		return d.allowed, d.reason, nil
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range u.GetExtra() {
		extra[k] = v
	}
	review := &authorizationv1.SubjectAccessReview{
		TypeMeta: metav1.TypeMeta{APIVersion: authorizationv1.SchemeGroupVersion.String(), Kind: "SubjectAccessReview"},
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: extra,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Group: tenancyv1alpha1.SchemeGroupVersion.Group, Version: tenancyv1alpha1.SchemeGroupVersion.Version,
				Resource: "workspacetypes", Name: typeName, Verb: verb,
			},
		},
	}
	body, err := json.Marshal(review)
	if err != nil {
		return false, "", err
	}
	resp, err := a.server.do(ctx, http.MethodPost, typeCluster.RequestPath()+"/apis/authorization.k8s.io/v1/subjectaccessreviews", nil, body)
	if err == nil {
		_, err = readObject(resp, review)
	}
	if err != nil {
		return false, "", fmt.Errorf("review access to WorkspaceType %s in %s: %w", typeName, typeCluster, err)
	}
	ttl := deniedTTL
	if review.Status.Allowed {
		ttl = allowedTTL
	}
	d = decision{allowed: review.Status.Allowed, reason: review.Status.Reason, expires: a.now().Add(ttl)}
	a.mu.Lock()
	if len(a.decisions) >= maxDecisions {
		a.decisions = map[string]decision{}
	}
	a.decisions[key] = d
	a.mu.Unlock()
	return d.allowed, d.reason, nil
}

// decisionKey identifies a user (with groups and extra) and the question.
func decisionKey(u user.Info, verb string, typeCluster logicalcluster.Path, typeName string) string {
	var b strings.Builder
	for _, s := range []string{verb, string(typeCluster), typeName, u.GetName(), u.GetUID()} {
		b.WriteString(s)
		b.WriteByte(0)
	}
	groups := append([]string(nil), u.GetGroups()...)
	sort.Strings(groups)
	b.WriteString(strings.Join(groups, "\x01"))
	b.WriteByte(0)
	keys := make([]string, 0, len(u.GetExtra()))
	for k := range u.GetExtra() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(1)
		b.WriteString(strings.Join(u.GetExtra()[k], "\x01"))
		b.WriteByte(0)
	}
	return b.String()
}
