package shard

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/server/healthz"
)

func TestStartupCheckIsRedUntilItsStepSucceedsAndForGoodWhenItFails(t *testing.T) {
	var _ healthz.HealthChecker = &startupCheck{}

	ok := newStartupCheck("shardplane-controllers")
	if err := ok.Check(nil); err == nil {
		t.Fatal("ready before the controllers started")
	}
	ok.finish(nil)
	if err := ok.Check(nil); err != nil {
		t.Fatalf("not ready after the controllers started: %v", err)
	}

	failed := newStartupCheck("shardplane-controllers")
	failed.finish(errors.New("garbage collector: no discovery"))
	err := failed.Check(nil)
	if err == nil || !strings.Contains(err.Error(), "garbage collector: no discovery") || !strings.Contains(err.Error(), "shardplane-controllers failed") {
		t.Fatalf("a failed start-up reads %v, want the failure and its reason", err)
	}
}

func TestFailingControllersTurnReadyzRedWithTheReason(t *testing.T) {
	ctx := context.Background()
	failing := newStartupCheck("shardplane-controllers")
	mux := http.NewServeMux()
	healthz.InstallReadyzHandler(mux, healthz.PingHealthz, failing)

	readyz := func() (int, string) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz?verbose", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := readyz(); code == http.StatusOK {
		t.Fatalf("/readyz is green before the controllers started:\n%s", body)
	}
	failing.run(ctx, "start Kubernetes controllers", func(context.Context) error { return errors.New("garbage collector: no discovery") })
	code, body := readyz()
	if code == http.StatusOK || !strings.Contains(body, "[-]shardplane-controllers failed") {
		t.Fatalf("/readyz after a failed start: HTTP %d\n%s", code, body)
	}

	ok := newStartupCheck("shardplane-controllers")
	ok.run(ctx, "start Kubernetes controllers", func(context.Context) error { return nil })
	if err := ok.Check(nil); err != nil {
		t.Errorf("a successful start is not ready: %v", err)
	}
}
