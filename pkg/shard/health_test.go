package shard

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/server/healthz"
)

func TestStartupCheckIsRedUntilItsStepSucceedsAndForGoodWhenItFails(t *testing.T) {
	var _ healthz.HealthChecker = &startupCheck{}

	ok := newStartupCheck("kplane-controllers")
	if err := ok.Check(nil); err == nil {
		t.Fatal("ready before the controllers started")
	}
	ok.finish(nil)
	if err := ok.Check(nil); err != nil {
		t.Fatalf("not ready after the controllers started: %v", err)
	}

	failed := newStartupCheck("kplane-controllers")
	failed.finish(errors.New("garbage collector: no discovery"))
	err := failed.Check(nil)
	if err == nil || !strings.Contains(err.Error(), "garbage collector: no discovery") || !strings.Contains(err.Error(), "kplane-controllers failed") {
		t.Fatalf("a failed start-up reads %v, want the failure and its reason", err)
	}
}
