package cacheserver

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func TestWritersWriteReadersReadOthersAreToldWhy(t *testing.T) {
	a := Access{WriterGroups: []string{"writers"}, ReaderGroups: []string{"readers"}}.Authorizer()
	resource := func(verb string, groups ...string) authorizer.Attributes {
		return authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "u", Groups: groups}, Verb: verb, APIGroup: "apis.kcp.io", Resource: "apiexports", ResourceRequest: true}
	}
	path := func(p string, groups ...string) authorizer.Attributes {
		return authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "u", Groups: groups}, Verb: "get", Path: p}
	}
	for _, tc := range []struct {
		name   string
		attrs  authorizer.Attributes
		allow  bool
		reason string
	}{
		{"writer creates", resource("create", "writers"), true, ""},
		{"writer deletes", resource("delete", "writers"), true, ""},
		{"writer lists", resource("list", "writers"), true, ""},
		{"masters create", resource("create", user.SystemPrivilegedGroup), true, ""},
		{"reader watches", resource("watch", "readers"), true, ""},
		{"reader reads discovery", path("/apis", "readers"), true, ""},
		{"reader creates", resource("create", "readers"), false, `"writers"`},
		{"stranger creates", resource("create", user.AllAuthenticated), false, `only members of the groups "writers"`},
		{"stranger lists", resource("list", user.AllAuthenticated), false, `read by members of the groups "readers"`},
		{"anonymous probes", path("/readyz", user.AllUnauthenticated), true, ""},
		{"anonymous probes a check", path("/livez/ping", user.AllUnauthenticated), true, ""},
		{"anonymous scrapes", path("/metrics", user.AllUnauthenticated), false, "read by members"},
		{"masters profile", path("/debug/pprof/heap", user.SystemPrivilegedGroup), true, ""},
		{"writer profiles", path("/debug/pprof/heap", "writers"), false, "system:masters only"},
		{"reader profiles", path("/debug/pprof/", "readers"), false, "system:masters only"},
	} {
		d, reason, err := a.Authorize(context.Background(), tc.attrs)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if (d == authorizer.DecisionAllow) != tc.allow {
			t.Errorf("%s: decision %v, want allowed %t", tc.name, d, tc.allow)
		}
		if !strings.Contains(reason, tc.reason) {
			t.Errorf("%s: reason %q, want it to mention %q", tc.name, reason, tc.reason)
		}
	}
}
