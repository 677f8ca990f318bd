// Package logicalclusterdump serves LogicalClusterDumps: create-only,
// never stored, each answered with a page of the request cluster's stored
// objects as they are in etcd. The destination of a move reads the
// origin's data with them.
package logicalclusterdump

import (
	"context"
	"encoding/base64"
	"fmt"
	"k8s.io/apiserver/pkg/authentication/user"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	"github.com/shardplane/shardplane/pkg/clustermove"
	"github.com/shardplane/shardplane/pkg/identities"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// REST answers LogicalClusterDumps from the shard's etcd.
type REST struct {
	kv     func() clientv3.KV
	prefix string
}

var (
	_ rest.Creater              = &REST{}
	_ rest.Scoper               = &REST{}
	_ rest.SingularNameProvider = &REST{}
)

// NewREST returns the storage; kv returns the shard's etcd (nil when it
// has none to read), prefix is its etcd prefix.
func NewREST(kv func() clientv3.KV, prefix string) *REST {
	return &REST{kv: kv, prefix: prefix}
}

// New returns an empty LogicalClusterDump.
func (*REST) New() runtime.Object { return &migrationv1alpha1.LogicalClusterDump{} }

// Destroy releases nothing: the etcd client is the shard's.
func (*REST) Destroy() {}

// NamespaceScoped is false: a dump is of a whole logical cluster.
func (*REST) NamespaceScoped() bool { return false }

// GetSingularName returns logicalclusterdump.
func (*REST) GetSingularName() string { return "logicalclusterdump" }

var resource = migrationv1alpha1.Resource("logicalclusterdumps")

// Create answers a page of the request cluster's stored objects. Only the
// system reads raw storage: system:masters and the shards' own
// system:kcp:logical-cluster-admin.
func (r *REST) Create(ctx context.Context, obj runtime.Object, _ rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	dump, ok := obj.(*migrationv1alpha1.LogicalClusterDump)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a LogicalClusterDump: %T", obj))
	}
	u, ok := request.UserFrom(ctx)
	if !ok || !system(u.GetGroups()) {
		return nil, apierrors.NewForbidden(resource, "", fmt.Errorf("only the system reads a logical cluster's storage"))
	}
	cluster, ok := logicalcluster.ClusterFromContext(ctx)
	if !ok || cluster.IsWildcard() {
		return nil, apierrors.NewBadRequest("a LogicalClusterDump is created in the logical cluster to dump, not across clusters")
	}
	var kv clientv3.KV
	if r.kv != nil {
		kv = r.kv()
	}
	if kv == nil {
		return nil, apierrors.NewServiceUnavailable("this shard cannot read its storage directly")
	}
	if dump.Spec.Limit < 0 || dump.Spec.MaxBytes < 0 {
		return nil, apierrors.NewBadRequest("spec.limit and spec.maxBytes must not be negative")
	}
	revision, from, err := parseContinue(dump.Spec.Continue)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	page, err := clustermove.Dump(ctx, kv, r.prefix, cluster, revision, from, dump.Spec.Limit)
	if err != nil {
		if strings.Contains(err.Error(), "compacted") {
			return nil, apierrors.NewResourceExpired("the dump's snapshot was compacted: start again without spec.continue")
		}
		return nil, apierrors.NewInternalError(err)
	}
	out := &migrationv1alpha1.LogicalClusterDump{ObjectMeta: dump.ObjectMeta}
	// The etcd revision the dump reads at.
	out.ResourceVersion = strconv.FormatInt(page.Revision, 10)
	var size int64
	for i, e := range page.Entries {
		out.Status.Entries = append(out.Status.Entries, migrationv1alpha1.EtcdEntry{Key: e.Key, Value: e.Value})
		size += int64(len(e.Value))
		if dump.Spec.MaxBytes > 0 && size >= dump.Spec.MaxBytes && i < len(page.Entries)-1 {
			page.Continue = clustermove.After(r.prefix, e.Key)
			break
		}
	}
	if page.Continue != "" {
		out.Status.Continue = formatContinue(page.Revision, page.Continue)
	}
	return out, nil
}

func system(groups []string) bool {
	for _, g := range groups {
		if g == user.SystemPrivilegedGroup || g == identities.LogicalClusterAdminGroup {
			return true
		}
	}
	return false
}

// The continue token carries the snapshot's revision and the next key.
func formatContinue(revision int64, next string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(revision, 10) + ":" + next))
}

func parseContinue(token string) (int64, string, error) {
	if token == "" {
		return 0, "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return 0, "", fmt.Errorf("spec.continue is not a token this server issued")
	}
	rev, next, ok := strings.Cut(string(raw), ":")
	revision, err := strconv.ParseInt(rev, 10, 64)
	if !ok || err != nil || revision <= 0 {
		return 0, "", fmt.Errorf("spec.continue is not a token this server issued")
	}
	return revision, next, nil
}
