package exepages

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

func TestReleaseWhenReadyWaitsForReadiness(t *testing.T) {
	var asked, released atomic.Int32
	ready := func() bool { return asked.Add(1) >= 3 }
	releaseWhenReady(context.Background(), ready, time.Millisecond, func() { released.Add(1) })
	if asked.Load() != 3 || released.Load() != 1 {
		t.Fatalf("asked %d times, released %d times; want 3 and 1", asked.Load(), released.Load())
	}
}

func TestReleaseWhenReadyStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var released atomic.Bool
	go func() {
		defer close(done)
		releaseWhenReady(ctx, func() bool { return false }, time.Millisecond, func() { released.Store(true) })
	}()
	cancel()
	<-done
	if released.Load() {
		t.Fatal("released although never ready")
	}
}

func TestReleaseWhenReadyAsksTheReadyzHandler(t *testing.T) {
	var calls atomic.Int32
	readyz := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			t.Errorf("asked %s", r.URL.Path)
		}
		if calls.Add(1) < 2 {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
		}
	})
	ReleaseWhenReady(context.Background(), readyz)
	if calls.Load() != 2 {
		t.Fatalf("/readyz asked %d times, want 2", calls.Load())
	}
}

func TestReleaseAgainOnlyWhereReleasedOnceReady(t *testing.T) {
	released.Store(false)
	if ReleaseAgain(context.Background()) {
		t.Fatal("released again although never released once ready")
	}
	ReleaseWhenReady(context.Background(), http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	if !released.Load() {
		t.Skip("the pages could not be released here")
	}
	if !ReleaseAgain(context.Background()) {
		t.Fatal("not released again after a release once ready")
	}
}

func TestErrUnsupportedIsTheStandardOne(t *testing.T) {
	err := fmt.Errorf("%w: EINVAL", ErrUnsupported)
	if !errors.Is(err, errors.ErrUnsupported) || !errors.Is(err, ErrUnsupported) {
		t.Errorf("%v is not both ErrUnsupported and errors.ErrUnsupported", err)
	}
	if got, want := ErrUnsupported.Error(), "paging out the executable's pages is not supported here"; got != want {
		t.Errorf("ErrUnsupported = %q, want %q", got, want)
	}
}
