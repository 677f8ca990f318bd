package initializingworkspaces

import (
	"testing"

	"github.com/shardplane/shardplane/pkg/virtual/viewurl"
)

// The controllers publish view URLs by viewurl's names; the views must be
// served under the same ones.
func TestLifecycleServiceNamesAreTheViewNames(t *testing.T) {
	if Initializing.ServiceName() != viewurl.InitializingView || Terminating.ServiceName() != viewurl.TerminatingView {
		t.Errorf("service names %q %q, want %q %q", Initializing.ServiceName(), Terminating.ServiceName(), viewurl.InitializingView, viewurl.TerminatingView)
	}
}
