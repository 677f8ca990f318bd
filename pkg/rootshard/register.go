package rootshard

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/shardplane/shardplane/pkg/bootstrap"
	"github.com/shardplane/shardplane/pkg/kcpclient"
)

// registerRetry is how often registration is retried while root does not
// answer.
const registerRetry = 2 * time.Second

// Register creates or updates the Shard object of shard in root on the root
// shard at config (its base URL), retrying until root answers or ctx is
// done.
func Register(ctx context.Context, config *rest.Config, shard bootstrap.Shard) error {
	client, err := kcpclient.New(config)
	if err != nil {
		return err
	}
	logger := klog.FromContext(ctx).WithValues("shard", shard.Name, "root", config.Host)
	failures := 0
	err = wait.PollUntilContextCancel(ctx, registerRetry, true, func(ctx context.Context) (bool, error) {
		if err := bootstrap.RegisterShard(ctx, client, shard); err != nil {
			// Root being away is expected at times: say so now and then.
			if failures%15 == 0 {
				logger.Error(err, "Registering the Shard in root failed, retrying")
			}
			failures++
			return false, nil
		}
		return true, nil
	})
	if err == nil {
		logger.Info("Registered the Shard in root", "baseURL", shard.BaseURL, "externalURL", shard.ExternalURL)
	}
	return err
}
