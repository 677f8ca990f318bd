package shard

import (
	"strings"
	"testing"
)

func TestAuthorizationOrderIsValidatedAsKCPs(t *testing.T) {
	for _, tc := range []struct {
		order   []string
		webhook string
		wantErr string
	}{
		{order: defaultAuthorizationOrder},
		{order: []string{"Webhook", "AlwaysAllowGroups", "AlwaysAllowPaths", "RBAC"}, webhook: "webhook.kubeconfig"},
		{order: []string{"RBAC"}},
		{order: []string{"AlwaysAllowGroups", "ABAC", "RBAC"}, wantErr: `unknown step "ABAC"`},
		{order: []string{"RBAC", "RBAC"}, wantErr: `step "RBAC" given twice`},
		{order: []string{"AlwaysAllowGroups", "Webhook"}, wantErr: "must contain RBAC"},
		{order: []string{"RBAC"}, webhook: "webhook.kubeconfig", wantErr: "needs Webhook"},
	} {
		o := newAuthorizationOptions()
		o.Order, o.Webhook.WebhookConfigFile = tc.order, tc.webhook
		err := o.validate()
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("order %v webhook %q: %v, want %q", tc.order, tc.webhook, err, tc.wantErr)
		}
	}
}
