package servercmd

import (
	"context"
	"errors"
	"runtime/debug"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

func TestProcessDefaultsLeaveWhatWasChosen(t *testing.T) {
	t.Setenv("GOGC", "100")
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	gate := string(features.ListFromCacheSnapshot)
	enabled := utilfeature.DefaultFeatureGate.Enabled(features.ListFromCacheSnapshot)
	if err := ProcessDefaults([]string{gate}, sets.New(gate)); err != nil {
		t.Fatal(err)
	}
	if got := utilfeature.DefaultFeatureGate.Enabled(features.ListFromCacheSnapshot); got != enabled {
		t.Errorf("%s changed to %v although --feature-gates named it", gate, got)
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GC percent %d although GOGC is set, want 100", got)
	}
}

func TestStopCauseIsTheFailureNotTheSignal(t *testing.T) {
	failed := errors.New("embedded etcd stopped")
	serveErr := errors.New("listen")
	signalled, stop := context.WithCancel(context.Background())
	stop()
	etcdFailed, fail := context.WithCancelCause(context.Background())
	fail(failed)
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want error
	}{
		{name: "signal", ctx: signalled},
		{name: "etcd failed", ctx: etcdFailed, want: failed},
		{name: "serving failed", ctx: etcdFailed, err: serveErr, want: serveErr},
	} {
		if got := StopCause(tc.ctx, tc.err); !errors.Is(got, tc.want) || (tc.want == nil && got != nil) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
