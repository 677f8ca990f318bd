package workspacecontent

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/identities"
)

func TestDeepSubjectAccessReviewsOnlyForTheSystem(t *testing.T) {
	sar := &apirequest.RequestInfo{IsResourceRequest: true, APIGroup: "authorization.k8s.io", Resource: "subjectaccessreviews", Verb: "create"}
	configmaps := &apirequest.RequestInfo{IsResourceRequest: true, Resource: "configmaps", Verb: "create"}
	masters := &user.DefaultInfo{Name: "m", Groups: []string{user.SystemPrivilegedGroup}}
	external := &user.DefaultInfo{Name: "x", Groups: []string{identities.KCPAdminGroup}}
	tenant := &user.DefaultInfo{Name: "u", Groups: []string{user.AllAuthenticated}}
	for _, tc := range []struct {
		name   string
		info   *apirequest.RequestInfo
		who    user.Info
		header string
		want   bool
	}{
		{"system:masters asks", sar, masters, "true", true},
		{"the views' process asks", sar, external, "true", true},
		{"a tenant asks", sar, tenant, "true", false},
		{"no header", sar, masters, "", false},
		{"not a review", configmaps, masters, "true", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var deep bool
			h := WithDeepSubjectAccessReviews(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { deep = IsDeepSAR(r.Context()) }))
			r := httptest.NewRequest(http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews", nil)
			if tc.header != "" {
				r.Header.Set(DeepSARHeader, tc.header)
			}
			r = r.WithContext(apirequest.WithUser(apirequest.WithRequestInfo(r.Context(), tc.info), tc.who))
			h.ServeHTTP(httptest.NewRecorder(), r)
			if deep != tc.want {
				t.Errorf("deep = %v, want %v", deep, tc.want)
			}
		})
	}
}

func TestDeepSARConfigSetsTheHeader(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = r.Header.Get(DeepSARHeader) }))
	defer srv.Close()
	c := WithDeepSARConfig(&rest.Config{Host: srv.URL})
	rt, err := rest.TransportFor(c)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got != "true" {
		t.Errorf("header %s = %q, want true", DeepSARHeader, got)
	}
}
