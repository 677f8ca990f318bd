package serviceaccountcluster

import (
	"context"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/kplane-dev/kplane/pkg/authentication/serviceaccount"
	"github.com/kplane-dev/kplane/pkg/logicalcluster"
)

func TestServiceAccountsAreDeniedOutsideTheirCluster(t *testing.T) {
	sa := &user.DefaultInfo{Name: "system:serviceaccount:team:default", Extra: map[string][]string{serviceaccount.ClusterExtraKey: {"a"}}}
	other := &user.DefaultInfo{Name: "alice"}
	tests := []struct {
		name    string
		user    user.Info
		cluster logicalcluster.Name
		want    authorizer.Decision
	}{
		{"service account in its cluster", sa, "a", authorizer.DecisionNoOpinion},
		{"service account elsewhere", sa, "b", authorizer.DecisionDeny},
		{"service account without cluster prefix", sa, logicalcluster.SystemAdmin, authorizer.DecisionDeny},
		{"service account in the wildcard", sa, logicalcluster.Wildcard, authorizer.DecisionDeny},
		{"other users", other, "b", authorizer.DecisionNoOpinion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := logicalcluster.WithCluster(context.Background(), tt.cluster)
			got, _, err := Authorizer{}.Authorize(ctx, authorizer.AttributesRecord{User: tt.user, Verb: "get"})
			if err != nil || got != tt.want {
				t.Errorf("decision %v (err %v), want %v", got, err, tt.want)
			}
		})
	}
}
