package wildcardinformer

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/server/healthz"
)

// Synced tells whether every informer has listed once.
func Synced(informers ...*Informer) bool {
	for _, inf := range informers {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

// WaitForSync blocks until every informer has listed once, or ctx is done.
func WaitForSync(ctx context.Context, informers ...*Informer) error {
	return wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		return Synced(informers...), nil
	})
}

// SyncedCheck is a readiness check that fails, naming the informers, until
// all of them have listed once.
func SyncedCheck(name string, informers ...*Informer) healthz.HealthChecker {
	return healthz.NamedCheck(name, func(*http.Request) error {
		var pending []string
		for _, inf := range informers {
			if !inf.HasSynced() {
				pending = append(pending, inf.Name())
			}
		}
		if len(pending) > 0 {
			return fmt.Errorf("informers not synced yet: %v", pending)
		}
		return nil
	})
}
