package home

import (
	"strings"
	"testing"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func TestClusterNameIsKCPsHomeClusterName(t *testing.T) {
	for _, tc := range []struct{ user, want string }{
		// kcp's home of kcp-admin, as its plugin prints it (kcp-dev/kcp#3011).
		{"kcp-admin", "kvdk2spgmbix"},
		{"alice", "v1u4alow0iv9"},
		// SHA-224 of user-420 starts with a zero byte: one 0 in front.
		{"user-420", "086x7g9l1ke5"},
	} {
		if got := ClusterName(tc.user); string(got) != tc.want {
			t.Errorf("ClusterName(%q) = %q, want %q", tc.user, got, tc.want)
		}
	}
}

func TestEveryUserGetsAValidDistinctClusterName(t *testing.T) {
	users := []string{"alice", "Alice", "bob", "system:serviceaccount:ns:sa", "a@b.c", strings.Repeat("x", 300), "", "user:alice", "alice:team"}
	seen := map[logicalcluster.Name]string{}
	for _, u := range users {
		name := ClusterName(u)
		if err := logicalcluster.ValidateName(string(name)); err != nil {
			t.Errorf("ClusterName(%q) = %q: %v", u, name, err)
		}
		if other, ok := seen[name]; ok {
			t.Errorf("users %q and %q share home %q", u, other, name)
		}
		seen[name] = u
	}
}

func TestPathIsUserColonNameWhenTheNameIsOneSegment(t *testing.T) {
	for _, tc := range []struct{ user, want string }{
		{"alice", "user:alice"},
		{"user-1", "user:user-1"},
		{"system", "user:system"},
		// Names that are not one path segment: the cluster name, which no
		// other user's path can equal.
		{"system:serviceaccount:ns:sa", string(ClusterName("system:serviceaccount:ns:sa"))},
		{"alice:team", string(ClusterName("alice:team"))},
		{"a@b.c", string(ClusterName("a@b.c"))},
		{"Alice", string(ClusterName("Alice"))},
		{strings.Repeat("a", 64), string(ClusterName(strings.Repeat("a", 64)))},
	} {
		got := Path(tc.user)
		if string(got) != tc.want {
			t.Errorf("Path(%q) = %q, want %q", tc.user, got, tc.want)
		}
		if _, err := logicalcluster.ParsePath(string(got)); err != nil {
			t.Errorf("Path(%q) = %q does not parse: %v", tc.user, got, err)
		}
	}
}
