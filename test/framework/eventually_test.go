package framework

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestPollEveryStopsAtTheFirstSuccess(t *testing.T) {
	calls := 0
	err := PollEvery(context.Background(), time.Millisecond, time.Minute, func(context.Context) error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("PollEvery = %v after %d calls, want nil after 3", err, calls)
	}
}

func TestPollEveryNamesTheLastErrorAfterTheTimeout(t *testing.T) {
	err := PollEvery(context.Background(), time.Millisecond, 20*time.Millisecond, func(context.Context) error {
		return errors.New("still broken")
	})
	if err == nil || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "still broken") {
		t.Errorf("PollEvery = %v, want a deadline error naming the last error", err)
	}
}
