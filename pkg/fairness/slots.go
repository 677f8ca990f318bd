package fairness

import (
	"context"
	"errors"
	"sync"
)

// ErrTooManyWaiting is Acquire's answer when maxWaiting wait already.
var ErrTooManyWaiting = errors.New("too many requests wait already")

// Slots bounds how many requests of each key run at once; the others wait
// their turn in order of arrival. The zero value is ready to use.
type Slots[K comparable] struct {
	mu   sync.Mutex
	keys map[K]*keySlots
}

type keySlots struct {
	running int64
	waiting []chan struct{}
}

// Acquire takes one of key's max slots, waiting in turn until one frees or
// ctx ends (then ctx's error); when maxWaiting (> 0) wait already, it
// does not wait (ErrTooManyWaiting). release gives the slot back once.
func (s *Slots[K]) Acquire(ctx context.Context, key K, max, maxWaiting int64) (release func(), err error) {
	s.mu.Lock()
	if s.keys == nil {
		s.keys = map[K]*keySlots{}
	}
	k := s.keys[key]
	if k == nil {
		k = &keySlots{}
		s.keys[key] = k
	}
	if k.running < max && len(k.waiting) == 0 {
		k.running++
		s.mu.Unlock()
		return s.releaser(key), nil
	}
	if maxWaiting > 0 && int64(len(k.waiting)) >= maxWaiting {
		if k.running == 0 {
			delete(s.keys, key)
		}
		s.mu.Unlock()
		return nil, ErrTooManyWaiting
	}
	turn := make(chan struct{})
	k.waiting = append(k.waiting, turn)
	s.mu.Unlock()

	select {
	case <-turn:
		return s.releaser(key), nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, w := range k.waiting {
		if w == turn {
			k.waiting = append(k.waiting[:i], k.waiting[i+1:]...)
			return nil, ctx.Err()
		}
	}
	// The turn came as ctx ended: it is handed on.
	s.handOn(key, k)
	return nil, ctx.Err()
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
		close(k.waiting[0])
		k.waiting = k.waiting[1:]
		return
	}
	if k.running--; k.running <= 0 {
		delete(s.keys, key)
	}
}
