package shard

import (
	"fmt"
	"net/http"
	"sync"
)

// startupCheck is a readiness check for a start-up step that runs in the
// background: not ready until the step finishes, then ready, or not ready
// for good with the step's error. A step that fails is never only logged
// while the shard reports ready.
type startupCheck struct {
	name string

	mu   sync.Mutex
	done bool
	err  error
}

func newStartupCheck(name string) *startupCheck { return &startupCheck{name: name} }

// Name implements healthz.HealthChecker.
func (c *startupCheck) Name() string { return c.name }

// Check implements healthz.HealthChecker.
func (c *startupCheck) Check(*http.Request) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.err != nil:
		return fmt.Errorf("%s failed: %w", c.name, c.err)
	case !c.done:
		return fmt.Errorf("%s not finished yet", c.name)
	}
	return nil
}

// finish records the step's outcome.
func (c *startupCheck) finish(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done, c.err = true, err
}
