package framework

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapiserver "k8s.io/apiserver/pkg/server"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
)

// recoveredPanics sums the process's shardplane_recovered_panics_total.
func recoveredPanics(t *testing.T) float64 {
	t.Helper()
	bySite, err := testutil.GetCounterValuesFromGatherer(legacyregistry.DefaultGatherer, "shardplane_recovered_panics_total", map[string]string{}, "site")
	if err != nil {
		t.Fatal(err)
	}
	var total float64
	for _, n := range bySite {
		total += n
	}
	return total
}

func TestPanicsInTheHandlerChainAreAnswered500AndCounted(t *testing.T) {
	for _, tc := range []struct {
		name       string
		api        http.HandlerFunc
		authorizer authorizer.AuthorizerFunc
	}{
		{name: "API handler", api: func(http.ResponseWriter, *http.Request) { panic("the API handler's panic") }},
		{name: "filter", authorizer: func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
			panic("the authorizer's panic")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gc := genericapiserver.NewConfig(scheme.Codecs)
			gc.RequestInfoResolver = genericapiserver.NewRequestInfoResolver(gc)
			gc.FeatureGate = utilfeature.DefaultFeatureGate
			if tc.authorizer != nil {
				gc.Authorization.Authorizer = tc.authorizer
			}
			api := http.Handler(tc.api)
			if tc.api == nil {
				api = http.NotFoundHandler()
			}
			before := recoveredPanics(t)
			rec := httptest.NewRecorder()
			buildHandlerChain(api, gc).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/services/apiexport/root/export/clusters/*/api/v1/configmaps", nil))
			if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "panic") {
				t.Errorf("HTTP %d %q, want a 500 that names the panic", rec.Code, rec.Body)
			}
			if after := recoveredPanics(t); after != before+1 {
				t.Errorf("shardplane_recovered_panics_total went from %v to %v, want one more", before, after)
			}
		})
	}
}

func TestKubeconfigNamingAClusterMeansTheShardsBaseURL(t *testing.T) {
	for server, want := range map[string]string{
		"https://127.0.0.1:6444/clusters/system:admin": "https://127.0.0.1:6444",
		"https://127.0.0.1:6444/prefix/clusters/root":  "https://127.0.0.1:6444/prefix",
		"https://127.0.0.1:6444":                       "https://127.0.0.1:6444",
		"https://127.0.0.1:6444/clusters/root/api/v1":  "https://127.0.0.1:6444/clusters/root/api/v1",
	} {
		path := filepath.Join(t.TempDir(), "kubeconfig")
		kubeconfig := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: s\n  cluster:\n    server: %s\ncontexts:\n- name: s\n  context:\n    cluster: s\n    user: u\nusers:\n- name: u\n  user:\n    token: t\ncurrent-context: s\n", server)
		if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := loadKubeconfig(path, "")
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Host != want {
			t.Errorf("server %s: host %s, want %s", server, cfg.Host, want)
		}
	}
}
