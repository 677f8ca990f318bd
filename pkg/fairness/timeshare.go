package fairness

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// TimeShareBurst is the request time a key that kept within its share has
// in hand: an idle workspace's burst.
const TimeShareBurst = time.Second

// TimeShares bounds the request time each key spends on average: a key of
// share s may run s seconds of requests per second (two requests running
// for a second are two seconds), with TimeShareBurst in hand. A request
// is charged its time when it ends; a key past its share is in debt, and
// its requests wait in order of arrival until the debt is paid back, then
// go ceil(s) at a time until none wait. Unlike Slots it leaves the shard
// idle while a key waits: that is its point. The zero value is ready to
// use, on the real clock.
type TimeShares[K comparable] struct {
	// Clock is the clock of the shares (nil: the real one).
	Clock clock.WithDelayedExecution

	mu        sync.Mutex
	keys      map[K]*keyShare
	sweepSize int
}

type keyShare struct {
	share float64
	// balance is the request time in hand at updated (negative: debt).
	balance time.Duration
	updated time.Time
	// running are the requests admitted and not ended; paced those of them
	// that waited.
	running, paced int
	waiting        turns
	timer          clock.Timer
}

// ErrDebtTooLong is Acquire's answer when a key's debt lasts longer than
// its request may wait.
var ErrDebtTooLong = errors.New("the debt of request time lasts longer than a request waits")

// Acquire admits a request of key under share (> 0), waiting in turn
// while key is in debt, until ctx ends (then ctx's error). It does not
// wait when maxWaiting (> 0) wait already (ErrTooManyWaiting) or the debt
// lasts longer than maxWait (> 0; ErrDebtTooLong). end charges the
// request's time, once. retryAfter is how long key's debt lasts when err
// is not nil.
func (t *TimeShares[K]) Acquire(ctx context.Context, key K, share float64, maxWait time.Duration, maxWaiting int64) (end func(), retryAfter time.Duration, err error) {
	t.mu.Lock()
	k := t.entry(key, share)
	if len(k.waiting) == 0 && k.balance >= 0 {
		k.running++
		t.mu.Unlock()
		return t.ender(k, false), 0, nil
	}
	switch {
	case maxWaiting > 0 && int64(len(k.waiting)) >= maxWaiting:
		defer t.mu.Unlock()
		return nil, k.debtLasts(), ErrTooManyWaiting
	case maxWait > 0 && k.debtLasts() > maxWait:
		defer t.mu.Unlock()
		return nil, k.debtLasts(), ErrDebtTooLong
	}
	turn := k.waiting.add()
	t.dispatch(k)
	t.mu.Unlock()

	select {
	case <-turn:
		return t.ender(k, true), 0, nil
	case <-ctx.Done():
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !k.waiting.leave(turn) {
		// The turn came as ctx ended: it is handed on.
		k.running--
		k.paced--
		t.dispatch(k)
	}
	return nil, k.debtLasts(), ctx.Err()
}

// Charge admits a request of key under share at once, in debt or not;
// end charges its time, once.
func (t *TimeShares[K]) Charge(key K, share float64) (end func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := t.entry(key, share)
	k.running++
	return t.ender(k, false)
}

func (t *TimeShares[K]) clock() clock.WithDelayedExecution {
	if t.Clock == nil {
		return clock.RealClock{}
	}
	return t.Clock
}

// entry is key's share, refilled up to now and made when missing; t.mu is
// held.
func (t *TimeShares[K]) entry(key K, share float64) *keyShare {
	now := t.clock().Now()
	if t.keys == nil {
		t.keys = map[K]*keyShare{}
	}
	k := t.keys[key]
	if k == nil {
		t.sweep(now)
		k = &keyShare{balance: TimeShareBurst, updated: now}
		t.keys[key] = k
	}
	k.share = share
	k.refill(now)
	return k
}

// sweep forgets the keys that have their whole burst in hand and nothing
// running or waiting, once the map has doubled since the last sweep; t.mu
// is held.
func (t *TimeShares[K]) sweep(now time.Time) {
	if len(t.keys) < t.sweepSize {
		return
	}
	for key, k := range t.keys {
		k.refill(now)
		if k.balance >= TimeShareBurst && k.running == 0 && len(k.waiting) == 0 && k.timer == nil {
			delete(t.keys, key)
		}
	}
	t.sweepSize = 2 * max(len(t.keys), 64)
}

// refill adds what k's share earned since updated, in floating point so
// that no share overflows a Duration.
func (k *keyShare) refill(now time.Time) {
	if elapsed := now.Sub(k.updated); elapsed > 0 {
		k.balance = time.Duration(min(float64(TimeShareBurst), float64(k.balance)+float64(elapsed)*k.share))
	}
	k.updated = now
}

// maxDebtLasts bounds debtLasts, for the Duration and Retry-After of a
// tiny share.
const maxDebtLasts = 24 * time.Hour

// debtLasts is how long until k's debt is paid back, at most maxDebtLasts.
func (k *keyShare) debtLasts() time.Duration {
	if k.balance >= 0 {
		return 0
	}
	return time.Duration(min(float64(maxDebtLasts), math.Ceil(float64(-k.balance)/k.share)))
}

// dispatch lets k's first waiters go when its debt is paid and fewer than
// ceil(share) of those that waited run, else sets a timer for when the
// debt will be paid; t.mu is held.
func (t *TimeShares[K]) dispatch(k *keyShare) {
	k.refill(t.clock().Now())
	for len(k.waiting) > 0 && k.balance >= 0 && float64(k.paced) < math.Max(1, math.Ceil(k.share)) {
		k.waiting.next()
		k.running++
		k.paced++
	}
	if len(k.waiting) == 0 || k.balance >= 0 || k.timer != nil {
		return
	}
	// Not within the clock's callback, which a fake clock calls with its
	// own lock held.
	k.timer = t.clock().AfterFunc(k.debtLasts(), func() {
		go func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			k.timer = nil
			t.dispatch(k)
		}()
	})
}

// ender charges a request of k the time from now until it is called.
func (t *TimeShares[K]) ender(k *keyShare, paced bool) func() {
	start := t.clock().Now()
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			now := t.clock().Now()
			k.refill(now)
			k.balance -= now.Sub(start)
			k.running--
			if paced {
				k.paced--
			}
			t.dispatch(k)
		})
	}
}
