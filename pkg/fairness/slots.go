package fairness

import (
	"context"
	"errors"
	"sync"
)

// ErrTooManyWaiting is Acquire's answer when maxWaiting wait already.
var ErrTooManyWaiting = errors.New("too many requests wait already")

// Slots bounds what each key holds at once: the requests of a workspace
// running on a shard, which wait their turn in order of arrival
// (Acquire), or the watches of a user, refused past the bound
// (TryAcquire). The zero value is ready to use.
type Slots[K comparable] struct {
	mu   sync.Mutex
	keys map[K]*keySlots
}

type keySlots struct {
	running int64
	waiting turns
}

// turns are the requests of a key waiting in order of arrival, each for
// its channel to close.
type turns []chan struct{}

// add queues a request last and returns the channel of its turn.
func (q *turns) add() chan struct{} {
	turn := make(chan struct{})
	*q = append(*q, turn)
	return turn
}

// next hands the first request its turn.
func (q *turns) next() {
	close((*q)[0])
	*q = (*q)[1:]
}

// leave takes turn out of the queue; false when it was handed its turn
// already (the caller holds it and must hand it on).
func (q *turns) leave(turn chan struct{}) bool {
	for i, w := range *q {
		if w == turn {
			*q = append((*q)[:i], (*q)[i+1:]...)
			return true
		}
	}
	return false
}

// Acquire takes one of key's max slots, waiting in turn until one frees or
// ctx ends (then ctx's error); when maxWaiting (> 0) wait already, it
// does not wait (ErrTooManyWaiting). release gives the slot back once.
func (s *Slots[K]) Acquire(ctx context.Context, key K, max, maxWaiting int64) (release func(), err error) {
	s.mu.Lock()
	if s.free(key, max) {
		s.entry(key).running++
		s.mu.Unlock()
		return s.releaser(key), nil
	}
	if k := s.keys[key]; maxWaiting > 0 && k != nil && int64(len(k.waiting)) >= maxWaiting {
		s.mu.Unlock()
		return nil, ErrTooManyWaiting
	}
	k := s.entry(key)
	turn := k.waiting.add()
	s.mu.Unlock()

	select {
	case <-turn:
		return s.releaser(key), nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !k.waiting.leave(turn) {
		// The turn came as ctx ended: it is handed on.
		s.handOn(key, k)
	}
	return nil, ctx.Err()
}

// TryAcquire takes one of key's max slots if one is free and nobody
// waits for one; release gives it back once.
func (s *Slots[K]) TryAcquire(key K, max int64) (release func(), ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.free(key, max) {
		return nil, false
	}
	s.entry(key).running++
	return s.releaser(key), true
}

// free tells whether key may take one of max slots at once; s.mu is held.
func (s *Slots[K]) free(key K, max int64) bool {
	if k := s.keys[key]; k != nil {
		return k.running < max && len(k.waiting) == 0
	}
	return max > 0
}

// entry is key's count, made when missing; s.mu is held.
func (s *Slots[K]) entry(key K) *keySlots {
	if s.keys == nil {
		s.keys = map[K]*keySlots{}
	}
	k := s.keys[key]
	if k == nil {
		k = &keySlots{}
		s.keys[key] = k
	}
	return k
}

func (s *Slots[K]) releaser(key K) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.handOn(key, s.keys[key])
		})
	}
}

// handOn passes a running slot of key to the first waiter, or frees it;
// s.mu is held.
func (s *Slots[K]) handOn(key K, k *keySlots) {
	if len(k.waiting) > 0 {
		k.waiting.next()
		return
	}
	if k.running--; k.running <= 0 {
		delete(s.keys, key)
	}
}
