package shard

import (
	"fmt"
	"net/http"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// withSyncedCaches answers 503 with Retry-After to requests into a
// workspace until the caches that authorization and admission read have
// their first list: before that an existing workspace looks missing and a
// permitted user would be told 403 ("workspace access not permitted") or
// 404. The shard's own loopback clients (its informers, bootstrap and
// controllers) and wildcard and system:* clusters pass: the caches are
// filled through them.
func withSyncedCaches(handler http.Handler, s runtime.NegotiatedSerializer, synced func() bool, loopbackToken string) http.Handler {
	var ready atomic.Bool
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if ready.Load() || !intoWorkspace(req.URL.Path) || (loopbackToken != "" && req.Header.Get("Authorization") == "Bearer "+loopbackToken) {
			handler.ServeHTTP(w, req)
			return
		}
		if synced() {
			ready.Store(true)
			handler.ServeHTTP(w, req)
			return
		}
		err := apierrors.NewServiceUnavailable(fmt.Sprintf("shard is starting: its caches are not synced yet, retry %s", req.URL.Path))
		err.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: 1}
		responsewriters.ErrorNegotiated(err, s, schema.GroupVersion{}, w, req)
	})
}

// intoWorkspace tells whether p addresses one workspace (not the wildcard,
// not a system:* logical cluster).
func intoWorkspace(p string) bool {
	segment, _, ok := logicalcluster.SplitRequestPath(p)
	return ok && segment != string(logicalcluster.Wildcard) && !logicalcluster.Path(segment).IsSystem()
}
