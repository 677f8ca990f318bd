package framework

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// EventuallyTimeout bounds Eventually: what a system does in the
// background (index, replication, scheduling) takes seconds at most.
const EventuallyTimeout = 2 * time.Minute

// PollInterval is how often Eventually and Poll try again.
const PollInterval = 200 * time.Millisecond

// Eventually calls cond every PollInterval until it returns nil, and fails
// the test with the message and cond's last error after EventuallyTimeout
// or when the test ends.
func Eventually(t testing.TB, cond func(context.Context) error, format string, args ...any) {
	t.Helper()
	EventuallyWithin(t, EventuallyTimeout, cond, format, args...)
}

// EventuallyWithin is Eventually with its own time budget.
func EventuallyWithin(t testing.TB, timeout time.Duration, cond func(context.Context) error, format string, args ...any) {
	t.Helper()
	EventuallyEvery(t, PollInterval, timeout, cond, format, args...)
}

// EventuallyEvery is EventuallyWithin that tries every interval, for the
// tests that measure how soon something happens.
func EventuallyEvery(t testing.TB, interval, timeout time.Duration, cond func(context.Context) error, format string, args ...any) {
	t.Helper()
	if err := PollEvery(t.Context(), interval, timeout, cond); err != nil {
		t.Fatalf("%s: %v", fmt.Sprintf(format, args...), err)
	}
}

// Poll is Eventually outside a test (TestMain, the benchmark): it returns
// an error with cond's last error instead of failing a test.
func Poll(ctx context.Context, timeout time.Duration, cond func(context.Context) error) error {
	return PollEvery(ctx, PollInterval, timeout, cond)
}

// PollEvery calls cond at once and then interval after each call until it
// returns nil, timeout passes or ctx ends; the error names cond's last
// error. A timeout of 0 leaves the deadline to ctx.
func PollEvery(ctx context.Context, interval, timeout time.Duration, cond func(context.Context) error) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	pause := time.NewTimer(interval)
	defer pause.Stop()
	for {
		last := cond(ctx)
		if last == nil {
			return nil
		}
		pause.Reset(interval)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), last)
		case <-pause.C:
		}
	}
}
