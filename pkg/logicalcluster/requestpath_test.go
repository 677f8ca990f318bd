package logicalcluster

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestParseRequestPath(t *testing.T) {
	for _, tc := range []struct {
		url         string
		wantSegment string
		wantRest    string
		wantErr     bool
		wantStatus  int32
	}{
		{"/clusters/root/api/v1/namespaces", "root", "/api/v1/namespaces", false, 0},
		{"/clusters/root", "root", "/", false, 0},
		{"/clusters/*/api/v1/configmaps", "*", "/api/v1/configmaps", false, 0},
		{"/clusters/system:admin/apis", "system:admin", "/apis", false, 0},
		{"/clusters/root:org:team/api", "root:org:team", "/api", false, 0},
		{"/clusters//api", "", "", true, 0},
		{"/clusters/../api", "", "", true, 0},
		{"/clusters/./api", "", "", true, 0},
		{"/clusters/a/../b/api", "", "", true, 0},
		{"/clusters/a/./api", "", "", true, 0},
		{"/clusters/a%2Fb/api", "", "", true, 0},
		{"/clusters/a%3Ab/api", "", "", true, 0},
		{"/cluster%73/a/api", "", "", true, 0},
		{"/clusters/a/clusters/b/api", "", "", true, http.StatusNotFound},
		{"/clusters/a/clusters/a/api/v1/configmaps", "", "", true, http.StatusNotFound},
		{"/clusters/a/clusters", "", "", true, http.StatusNotFound},
		{"/clusters/Bad_Name/api", "", "", true, 0},
		{"/clusters/-a/api", "", "", true, 0},
		{"/clusters/root::org/api", "", "", true, 0},
		{"/clusters/root:/api", "", "", true, 0},
		{"/clusters/" + strings.Repeat("a", 64) + "/api", "", "", true, 0},
	} {
		t.Run(tc.url, func(t *testing.T) {
			u, err := url.Parse(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			seg, rest, err := ParseRequestPath(u.Path, u.RawPath)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("want error, got segment %q rest %q", seg, rest)
				}
				want := tc.wantStatus
				if want == 0 {
					want = http.StatusBadRequest
				}
				if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != want {
					t.Fatalf("want HTTP %d, got %v", want, err)
				}
				return
			}
			if err != nil || string(seg) != tc.wantSegment || rest != tc.wantRest {
				t.Fatalf("got %q %q %v, want %q %q", seg, rest, err, tc.wantSegment, tc.wantRest)
			}
		})
	}
}

func TestSplitRequestPath(t *testing.T) {
	for _, tc := range []struct{ in, path, rest string }{
		{"/clusters/root:org/api/v1/namespaces", "root:org", "/api/v1/namespaces"},
		{"/clusters/root", "root", "/"},
		{"/clusters/*/api", "*", "/api"},
		{"/clusters//api", "", "/api"},
	} {
		path, rest, ok := SplitRequestPath(tc.in)
		if path != tc.path || rest != tc.rest || ok != (tc.path != "") {
			t.Errorf("SplitRequestPath(%s) = %q %q %v", tc.in, path, rest, ok)
		}
	}
}

func TestCutRequestPathFindsClustersBelowAnotherPrefix(t *testing.T) {
	for _, tc := range []struct{ in, before, cluster, rest string }{
		{"/services/apiexport/root/e/clusters/*/api/v1/pods", "/services/apiexport/root/e", "*", "/api/v1/pods"},
		{"https://host:6443/clusters/root:org", "https://host:6443", "root:org", "/"},
		{"/clusters/a/api", "", "a", "/api"},
	} {
		before, cluster, rest, found := CutRequestPath(tc.in)
		if !found || before != tc.before || cluster != tc.cluster || rest != tc.rest {
			t.Errorf("CutRequestPath(%s) = %q %q %q %v", tc.in, before, cluster, rest, found)
		}
	}
	if before, _, _, found := CutRequestPath("https://host/api"); found || before != "https://host/api" {
		t.Errorf("CutRequestPath without /clusters/ = %q %v", before, found)
	}
}

func TestWildcardAllowsListAndWatchOnly(t *testing.T) {
	for verb, want := range map[string]bool{"list": true, "watch": true, "get": false, "create": false, "delete": false, "deletecollection": false, "patch": false} {
		if WildcardAllows(verb) != want {
			t.Errorf("WildcardAllows(%q) = %v, want %v", verb, !want, want)
		}
	}
}

func TestParseNameOrWildcard(t *testing.T) {
	for s, ok := range map[string]bool{"*": true, "root": true, "system:admin": true, "root:org": false, "": false, "Root": false} {
		n, err := ParseNameOrWildcard(s)
		if (err == nil) != ok || (ok && string(n) != s) {
			t.Errorf("ParseNameOrWildcard(%q) = %q %v", s, n, err)
		}
	}
	for s, ok := range map[string]bool{"*": true, "root:org": true, "system:admin": true, "root:": false, "": false} {
		p, err := ParsePathOrWildcard(s)
		if (err == nil) != ok || (ok && string(p) != s) {
			t.Errorf("ParsePathOrWildcard(%q) = %q %v", s, p, err)
		}
	}
}
