package shard

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"k8s.io/klog/v2"
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

// run runs the step and records its outcome: a failure is logged and
// keeps /readyz red with the reason.
func (c *startupCheck) run(ctx context.Context, step string, start func(context.Context) error) {
	if err := start(ctx); err != nil {
		klog.FromContext(ctx).Error(err, "Start-up step failed", "step", step)
		c.finish(fmt.Errorf("%s: %w", step, err))
		return
	}
	c.finish(nil)
}

// finish records the step's outcome.
func (c *startupCheck) finish(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done, c.err = true, err
}
