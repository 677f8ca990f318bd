package servercmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"

	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// ProcessDefaults sets the process-wide settings the project's servers
// prefer where the command line and the environment did not choose: the
// feature gates offGates off unless chosen names them, and a lower GC
// target unless GOGC is set. Call it when a server starts, never when its
// command is built.
func ProcessDefaults(offGates []string, chosen sets.Set[string]) error {
	for _, gate := range offGates {
		if chosen.Has(gate) {
			continue
		}
		if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{gate: false}); err != nil {
			return fmt.Errorf("turn off %s: %w", gate, err)
		}
	}
	// Many small objects: a lower GC target keeps RSS near the live heap.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	return nil
}

// StopCause is why a server that served until ctx ended stopped: err if
// serving failed, else the cause of ctx (such as its embedded etcd
// failing) unless that was a plain cancellation (a signal).
func StopCause(ctx context.Context, err error) error {
	if err != nil {
		return err
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return nil
}
