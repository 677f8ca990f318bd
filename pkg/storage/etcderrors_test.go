package storage

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestTransientEtcdErrorsAreRetryable(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("changed"))
	for _, tc := range []struct {
		name string
		err  error
		want int // 0: unchanged
	}{
		{"leader failure timeout (seen under a 3-member leader loss)", rpctypes.ErrGRPCTimeoutDueToLeaderFail, http.StatusServiceUnavailable},
		{"leader changed", rpctypes.ErrGRPCLeaderChanged, http.StatusServiceUnavailable},
		{"no leader", rpctypes.ErrGRPCNoLeader, http.StatusServiceUnavailable},
		{"client side error value", rpctypes.ErrTimeout, http.StatusServiceUnavailable},
		{"wrapped", fmt.Errorf("txn: %w", rpctypes.ErrLeaderChanged), http.StatusServiceUnavailable},
		{"unavailable", status.Error(codes.Unavailable, "connection refused"), http.StatusServiceUnavailable},
		{"API errors pass", conflict, 0},
		{"other errors pass", errors.New("decode: bad"), 0},
		{"nil", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := retryable(tc.err)
			if tc.want == 0 {
				if got != tc.err {
					t.Fatalf("changed %v into %v", tc.err, got)
				}
				return
			}
			var s apierrors.APIStatus
			if !errors.As(got, &s) || int(s.Status().Code) != tc.want || s.Status().Details == nil || s.Status().Details.RetryAfterSeconds == 0 {
				t.Fatalf("%v became %#v, want %d with Retry-After", tc.err, got, tc.want)
			}
		})
	}
}
