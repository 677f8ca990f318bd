package cacheserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapiserver "k8s.io/apiserver/pkg/server"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"

	"github.com/shardplane/shardplane/pkg/cacheclient"
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
			gc := genericapiserver.NewConfig(codecs)
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
			buildHandlerChain(api, gc).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, cacheclient.ServicePrefix+"/shards/s1/clusters/c1/api/v1/configmaps", nil))
			if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "panic") {
				t.Errorf("HTTP %d %q, want a 500 that names the panic", rec.Code, rec.Body)
			}
			if after := recoveredPanics(t); after != before+1 {
				t.Errorf("shardplane_recovered_panics_total went from %v to %v, want one more", before, after)
			}
		})
	}
}

func TestSyntheticDelayServesAfterTheDelayAndNotForClientsThatLeft(t *testing.T) {
	served := 0
	h := withSyntheticDelay(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		served++
		w.WriteHeader(http.StatusNoContent)
	}), time.Millisecond)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusNoContent || served != 1 {
		t.Fatalf("after the delay: code %d, served %d; want 204 served once", rec.Code, served)
	}

	h = withSyntheticDelay(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served++ }), time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/readyz", nil).WithContext(ctx))
	if served != 1 {
		t.Errorf("a request whose client left was served")
	}
}
