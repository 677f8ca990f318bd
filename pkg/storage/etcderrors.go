package storage

import (
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// transientEtcdErrors are etcd's answers while it changes its leader or
// loses quorum: the request may be retried (a write that was applied
// anyway is then found as a conflict), which a bare 500 does not say.
var transientEtcdErrors = []error{
	rpctypes.ErrLeaderChanged, rpctypes.ErrNoLeader, rpctypes.ErrNotCapable,
	rpctypes.ErrTimeout, rpctypes.ErrTimeoutDueToLeaderFail, rpctypes.ErrTimeoutDueToConnectionLost,
	rpctypes.ErrNotLeader, rpctypes.ErrTimeoutWaitAppliedIndex, rpctypes.ErrTooManyRequests,
}

// retryable turns a transient etcd error into 503 with Retry-After;
// other errors are returned unchanged.
func retryable(err error) error {
	if err == nil {
		return nil
	}
	var apiStatus apierrors.APIStatus
	if errors.As(err, &apiStatus) {
		return err
	}
	transient := false
	etcdErr := rpctypes.Error(err)
	for _, e := range transientEtcdErrors {
		if errors.Is(etcdErr, e) || errors.Is(err, e) {
			transient = true
			break
		}
	}
	if s, ok := status.FromError(err); ok && s.Code() == codes.Unavailable {
		transient = true
	}
	if !transient {
		return err
	}
	unavailable := apierrors.NewServiceUnavailable(fmt.Sprintf("storage is changing its leader or unavailable, retry: %v", err))
	unavailable.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: 1}
	return unavailable
}
