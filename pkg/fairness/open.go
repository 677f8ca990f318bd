package fairness

import "sync"

// Open counts what each key holds open and bounds it: the watches of a
// user through a front-proxy, of a user of a workspace on a shard.
// The zero value is ready to use.
type Open[K comparable] struct {
	mu   sync.Mutex
	open map[K]int64
}

// Acquire counts one more for key unless it holds max already; release
// undoes it once.
func (o *Open[K]) Acquire(key K, max int64) (release func(), ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.open[key] >= max {
		return nil, false
	}
	if o.open == nil {
		o.open = map[K]int64{}
	}
	o.open[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			o.mu.Lock()
			defer o.mu.Unlock()
			if o.open[key]--; o.open[key] <= 0 {
				delete(o.open, key)
			}
		})
	}, true
}
