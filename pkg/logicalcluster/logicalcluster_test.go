package logicalcluster

import (
	"context"
	"strings"
	"testing"
)

func TestValidateName(t *testing.T) {
	for _, tc := range []struct {
		name  string
		valid bool
	}{
		{"root", true},
		{"2x7n4rj9q1k0abcd", true},
		{"system:admin", true},
		{"system:cache-data", true},
		{"a", true},
		{"a-b", true},
		{"", false},
		{"*", false},
		{"..", false},
		{".", false},
		{"Root", false},
		{"-root", false},
		{"root-", false},
		{"root:org", false},
		{"root/org", false},
		{"root%2Forg", false},
		{"system:", false},
		{"system:Admin", false},
		{"system:a:b", false},
		{strings.Repeat("a", 64), false},
		{strings.Repeat("a", 63), true},
		{"a b", false},
		{"a_b", false},
	} {
		err := ValidateName(tc.name)
		if (err == nil) != tc.valid {
			t.Errorf("ValidateName(%q) = %v, want valid=%v", tc.name, err, tc.valid)
		}
	}
}

func TestParsePath(t *testing.T) {
	for _, tc := range []struct {
		path  string
		valid bool
	}{
		{"root", true},
		{"root:org:team", true},
		{"user:alice", true},
		{"system:admin", true},
		{"", false},
		{":root", false},
		{"root:", false},
		{"root::org", false},
		{"root:Org", false},
		{"root:..", false},
		{"root/org", false},
		{"*", false},
	} {
		_, err := ParsePath(tc.path)
		if (err == nil) != tc.valid {
			t.Errorf("ParsePath(%q) = %v, want valid=%v", tc.path, err, tc.valid)
		}
	}
}

func TestPathParts(t *testing.T) {
	p := Path("root:org:team")
	if got, ok := p.Parent(); !ok || got != "root:org" {
		t.Errorf("Parent = %q,%v", got, ok)
	}
	if p.Base() != "team" {
		t.Errorf("Base = %q", p.Base())
	}
	if _, ok := p.Name(); ok {
		t.Errorf("multi-segment path must not be a name")
	}
	if n, ok := Path("root").Name(); !ok || n != Root {
		t.Errorf("Name(root) = %q,%v", n, ok)
	}
	if n, ok := Path("system:admin").Name(); !ok || n != SystemAdmin {
		t.Errorf("Name(system:admin) = %q,%v", n, ok)
	}
	if _, ok := Path("system:admin").Parent(); ok {
		t.Errorf("system path has no parent")
	}
	if got := Path("root").Join("org"); got != "root:org" {
		t.Errorf("Join = %q", got)
	}
	if got := len(Path("root:a:b").Segments()); got != 3 {
		t.Errorf("Segments = %d", got)
	}
}

func TestClusterContext(t *testing.T) {
	if _, ok := ClusterFromContext(context.Background()); ok {
		t.Fatal("empty context must carry no cluster")
	}
	ctx := WithCluster(context.Background(), "abc")
	if n, ok := ClusterFromContext(ctx); !ok || n != "abc" {
		t.Fatalf("got %q,%v", n, ok)
	}
}

func TestClusterURLsHaveOneSpelling(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{Name("root").RequestPath(), "/clusters/root"},
		{Path("root:org:team").RequestPath(), "/clusters/root:org:team"},
		{Wildcard.RequestPath(), "/clusters/*"},
		{Path("root:org").URL("https://127.0.0.1:6443/"), "https://127.0.0.1:6443/clusters/root:org"},
		{Name("abc").Path().URL("https://shard"), "https://shard/clusters/abc"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
