package home

import (
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
)

func TestTildePathIsTheCallersHome(t *testing.T) {
	alice := &user.DefaultInfo{Name: "alice"}
	home := string(ClusterName("alice"))
	for _, tc := range []struct {
		path string
		u    user.Info
		want string
		ok   bool
	}{
		{"/clusters/~/api/v1/namespaces", alice, "/clusters/" + home + "/api/v1/namespaces", true},
		{"/clusters/~", alice, "/clusters/" + home + "/", true},
		{"/clusters/~:project/apis", alice, "/clusters/" + home + ":project/apis", true},
		{"/clusters/~x/apis", alice, "/clusters/~x/apis", false},
		{"/clusters/root/apis", alice, "/clusters/root/apis", false},
		{"/api/v1", alice, "/api/v1", false},
		{"/clusters/~/api", &user.DefaultInfo{Name: user.Anonymous}, "/clusters/~/api", false},
		{"/clusters/~/api", nil, "/clusters/~/api", false},
	} {
		got, ok := TildePath(tc.path, tc.u)
		if got != tc.want || ok != tc.ok {
			t.Errorf("TildePath(%q) = %q, %v; want %q, %v", tc.path, got, ok, tc.want, tc.ok)
		}
	}
}
