package logicalcluster

import (
	"strings"
	"testing"
)

// FuzzParsePath checks that every path ParsePath accepts is made of valid
// names, and that the path helpers agree with one another on it.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{
		"root", "root:org:team", "system:admin", "system:", "system:a:b", "*",
		"", ":", "root:", ":root", "root::org", "Root", "a-", "-a", "a.b", "a/b",
		"root:..", "root:%2F", "ü", "root:" + strings.Repeat("a", 63), strings.Repeat("a", 64),
		strings.Repeat("a:", 200) + "a",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePath(s)
		if err != nil {
			if p != "" {
				t.Fatalf("ParsePath(%q) returned %q with error %v", s, p, err)
			}
			return
		}
		if string(p) != s {
			t.Fatalf("ParsePath(%q) = %q, want the input unchanged", s, p)
		}
		segments := p.Segments()
		if p.IsSystem() {
			if len(segments) != 1 {
				t.Fatalf("system path %q has segments %q, want one", p, segments)
			}
		} else {
			for _, seg := range segments {
				if err := ValidateName(seg); err != nil {
					t.Fatalf("ParsePath(%q) accepted segment %q: %v", s, seg, err)
				}
			}
		}
		if strings.Join(segments, separator) != s {
			t.Fatalf("segments %q of %q do not join back to it", segments, s)
		}
		if p.Base() != segments[len(segments)-1] {
			t.Fatalf("Base(%q) = %q, want the last segment %q", p, p.Base(), segments[len(segments)-1])
		}
		name, single := p.Name()
		if single != (len(segments) == 1) {
			t.Fatalf("Name(%q) single = %v with %d segments", p, single, len(segments))
		}
		if single && ValidateName(string(name)) != nil {
			t.Fatalf("Name(%q) = %q is not a valid name", p, name)
		}
		parent, ok := p.Parent()
		if ok != (len(segments) > 1) {
			t.Fatalf("Parent(%q) ok = %v with %d segments", p, ok, len(segments))
		}
		if ok {
			if parent.Join(p.Base()) != p {
				t.Fatalf("Parent(%q).Join(Base) = %q", p, parent.Join(p.Base()))
			}
			if _, err := ParsePath(string(parent)); err != nil {
				t.Fatalf("parent %q of valid path %q does not parse: %v", parent, p, err)
			}
		}
		if got := strings.TrimPrefix(p.RequestPath(), ClustersPrefix); got != s {
			t.Fatalf("RequestPath(%q) = %q does not end in the path", p, p.RequestPath())
		}
	})
}

// FuzzSplitRequestPath checks that building a request path and splitting
// it gives back the cluster and the rest, and that every path the strict
// parser accepts splits the same way.
func FuzzSplitRequestPath(f *testing.F) {
	for _, s := range [][2]string{
		{"root", "/api/v1/namespaces"}, {"root:org:team", "/apis/apps/v1/deployments"}, {"*", "/api"},
		{"system:admin", "/"}, {"", "/api"}, {"a/b", "/api"}, {"..", "/api"}, {"root", ""},
		{"root", "/clusters/other/api"}, {"ü", "/x"}, {"root", "/../metrics"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, cluster, rest string) {
		built := RequestPath(cluster) + rest
		c, r, ok := SplitRequestPath(built)
		if cluster != "" && !strings.Contains(cluster, "/") && strings.HasPrefix(rest, "/") {
			if !ok || c != cluster || r != rest {
				t.Fatalf("SplitRequestPath(%q) = %q %q %v, want %q %q", built, c, r, ok, cluster, rest)
			}
		}
		if ok && RequestPath(c)+r != built && RequestPath(c)+r != built+"/" {
			t.Fatalf("SplitRequestPath(%q) = %q %q, which builds %q", built, c, r, RequestPath(c)+r)
		}
		before, cc, cr, found := CutRequestPath("/services/x" + built)
		if !found || before != "/services/x" || cc != c || cr != r {
			t.Fatalf("CutRequestPath(/services/x%s) = %q %q %q %v, want %q %q", built, before, cc, cr, found, c, r)
		}
		p, pr, err := ParseRequestPath(built, "")
		if err == nil && (!ok || string(p) != c || pr != r) {
			t.Fatalf("ParseRequestPath(%q) = %q %q, SplitRequestPath %q %q %v", built, p, pr, c, r, ok)
		}
	})
}
