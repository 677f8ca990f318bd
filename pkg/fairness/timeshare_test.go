package fairness

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// admitted waits for the answer of an Acquire started in a goroutine.
type admitted struct {
	end func()
	err error
}

func acquireAsync(s *TimeShares[string], key string, share float64) chan admitted {
	done := make(chan admitted, 1)
	go func() {
		end, _, err := s.Acquire(context.Background(), key, share, 0, 0)
		done <- admitted{end, err}
	}()
	return done
}

func waitingShares[K comparable](s *TimeShares[K], key K) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := s.keys[key]; k != nil {
		return len(k.waiting)
	}
	return 0
}

func untilWaiting[K comparable](t *testing.T, s *TimeShares[K], key K, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for waitingShares(s, key) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests of %v wait, want %d", waitingShares(s, key), key, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// notYet fails t when done answers within a moment: what waits for a
// debt to be paid.
func notYet[T any](t *testing.T, done chan T, what string) {
	t.Helper()
	select {
	case <-done:
		t.Fatalf("%s went before its debt was paid", what)
	case <-time.After(20 * time.Millisecond):
	}
}

func TestTimeSharesChargeRequestTimeAndPaceTheDebt(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	s := &TimeShares[string]{Clock: clk}
	ctx := context.Background()

	// Within the burst requests go at once, side by side.
	end1, _, err := s.Acquire(ctx, "a", 0.5, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	end2, _, err := s.Acquire(ctx, "a", 0.5, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Both run 1.5 s: 3 s charged against 1 s in hand, 2 s of debt, paid
	// back at 0.5 s per second in 4 s.
	clk.Step(1500 * time.Millisecond)
	end1()
	end2()
	end2() // once only

	// Another key is not held by a's debt.
	if end, _, err := s.Acquire(ctx, "b", 0.5, 0, 0); err != nil {
		t.Fatalf("b: %v", err)
	} else {
		end()
	}

	first, second := acquireAsync(s, "a", 0.5), admitted{}
	untilWaiting(t, s, "a", 1)
	secondDone := acquireAsync(s, "a", 0.5)
	untilWaiting(t, s, "a", 2)
	clk.Step(3900 * time.Millisecond)
	notYet(t, first, "the first waiting request")
	clk.Step(100 * time.Millisecond)
	a := <-first
	if a.err != nil {
		t.Fatal(a.err)
	}
	// The debt is paid and one request that waited runs: the next waits
	// for it to end, and then for the time it took.
	notYet(t, secondDone, "the second waiting request")
	clk.Step(200 * time.Millisecond)
	a.end()
	notYet(t, secondDone, "the second waiting request")
	clk.Step(400 * time.Millisecond)
	if second = <-secondDone; second.err != nil {
		t.Fatal(second.err)
	}
	second.end()

	// Nobody waits and the debt is paid: requests go at once again.
	clk.Step(2 * time.Second)
	if end, _, err := s.Acquire(ctx, "a", 0.5, 0, 0); err != nil {
		t.Fatal(err)
	} else {
		end()
	}
}

func TestTimeSharesRefuseWhatWouldWaitTooLong(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	s := &TimeShares[string]{Clock: clk}
	ctx := context.Background()
	end, _, err := s.Acquire(ctx, "a", 0.25, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	clk.Step(3 * time.Second)
	end()
	// 2 s of debt at 0.25 s per second: 8 s.
	if _, retryAfter, err := s.Acquire(ctx, "a", 0.25, 5*time.Second, 0); !errors.Is(err, ErrDebtTooLong) || retryAfter != 8*time.Second {
		t.Errorf("a request that would wait 8 s with 5 s to wait: %v, retry after %s; want ErrDebtTooLong, 8s", err, retryAfter)
	}
	waiter := acquireAsync(s, "a", 0.25)
	untilWaiting(t, s, "a", 1)
	if _, _, err := s.Acquire(ctx, "a", 0.25, 0, 1); !errors.Is(err, ErrTooManyWaiting) {
		t.Errorf("a second waiter past maxWaiting 1: %v, want ErrTooManyWaiting", err)
	}
	// A waiter whose context ends leaves the queue; the next one waits in
	// its place.
	cancelled, cancel := context.WithCancel(ctx)
	gone := make(chan error, 1)
	go func() {
		_, _, err := s.Acquire(cancelled, "a", 0.25, 0, 0)
		gone <- err
	}()
	untilWaiting(t, s, "a", 2)
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Errorf("a waiter whose context ended: %v", err)
	}
	untilWaiting(t, s, "a", 1)
	clk.Step(8 * time.Second)
	if a := <-waiter; a.err != nil {
		t.Fatal(a.err)
	} else {
		a.end()
	}
}

func TestTimeSharesForgetIdleKeys(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	s := &TimeShares[string]{Clock: clk}
	for i := 0; i < 1000; i++ {
		end, _, err := s.Acquire(context.Background(), strconv.Itoa(i), 1, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		clk.Step(time.Millisecond)
		end()
		clk.Step(time.Second)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.keys) > 130 {
		t.Errorf("%d keys kept of 1000 idle ones", len(s.keys))
	}
}

func TestTimeSharesOfExtremeSharesStayInRange(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	s := &TimeShares[string]{Clock: clk}
	ctx := context.Background()
	for _, share := range []float64{1e300, 1e-300} {
		key := strconv.FormatFloat(share, 'g', -1, 64)
		end, _, err := s.Acquire(ctx, key, share, time.Minute, 0)
		if err != nil {
			t.Fatal(err)
		}
		clk.Step(2 * time.Second)
		end()
		clk.Step(time.Hour)
		_, retryAfter, err := s.Acquire(ctx, key, share, time.Minute, 0)
		switch {
		case share > 1 && err != nil:
			t.Errorf("share %g: %v, want admitted", share, err)
		case share < 1 && (!errors.Is(err, ErrDebtTooLong) || retryAfter != maxDebtLasts):
			t.Errorf("share %g: %v, retry after %s; want ErrDebtTooLong, %s", share, err, retryAfter, maxDebtLasts)
		}
	}
}
