package shard

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/klog/v2"

	tenancyv1alpha1 "github.com/kplane-dev/kplane/pkg/apis/tenancy/v1alpha1"
	"github.com/kplane-dev/kplane/pkg/authorization"
	"github.com/kplane-dev/kplane/pkg/authorization/workspacecontent"
	"github.com/kplane-dev/kplane/pkg/bootstrap"
	"github.com/kplane-dev/kplane/pkg/logicalcluster"
	"github.com/kplane-dev/kplane/pkg/rootshard"
	"github.com/kplane-dev/kplane/pkg/shardlookup"
	"github.com/kplane-dev/kplane/pkg/wildcardinformer"
	"github.com/kplane-dev/kplane/pkg/workspacetypes"
)

// rootShardCopies is the folder of the root directory that keeps the copies
// of root's objects a shard other than root has seen.
const rootShardCopies = "root-shard"

// newRootShardInformers returns the informers of root's objects on the root
// shard for a shard that does not host root, nil for the root shard.
func newRootShardInformers(o CompletedOptions) (*rootshard.Informers, error) {
	if o.RootShardKubeconfig == "" {
		return nil, nil
	}
	cfg, err := rootshard.LoadConfig(o.RootShardKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--root-shard-kubeconfig: %w", err)
	}
	return rootshard.New(cfg, filepath.Join(o.RootDirectory, rootShardCopies))
}

// withRoot returns the informers of this shard and, on a shard without root,
// those of root's objects.
func (i wildcardInformers) withRoot() []*wildcardinformer.Informer {
	all := i.all()
	if i.root != nil {
		all = append(all, i.root.All()...)
	}
	return all
}

// shards finds the Shard objects: in root on this shard, or as read from the
// root shard.
func (i wildcardInformers) shards() shardlookup.Source {
	if i.root != nil {
		return shardlookup.Root{Informer: i.root.Shards}
	}
	return shardlookup.Root{Informer: i.kcp.shards}
}

// workspaceTypes resolves WorkspaceTypes of this shard's logical clusters
// and, on a shard without root, of root as read from the root shard.
func (i wildcardInformers) workspaceTypes() workspacetypes.Resolver {
	get := i.kcp.workspaceType
	if i.root != nil {
		root := i.root.WorkspaceTypes
		get = func(cluster logicalcluster.Name, name string) *tenancyv1alpha1.WorkspaceType {
			obj, exists, err := wildcardinformer.First(cluster, "", name, i.kcp.workspaceTypes, root)
			if err != nil || !exists {
				return nil
			}
			return obj.(*tenancyv1alpha1.WorkspaceType)
		}
	}
	return workspacetypes.Resolver{ResolvePath: i.kcp.resolvePath, Get: get}
}

// rootShardRegistered is ready once the root shard's objects are known
// (read from root, or from the copy of an earlier start) and this shard's
// own Shard is among them (the shard has been registered at least once),
// and its system:admin cluster is bootstrapped.
func (c *Server) rootShardRegistered(systemAdmin *atomic.Bool) healthz.HealthChecker {
	return healthz.NamedCheck("kplane-root-shard", func(*http.Request) error {
		root := c.Informers.root
		if root == nil {
			return nil
		}
		if !systemAdmin.Load() {
			return fmt.Errorf("system:admin is not bootstrapped yet")
		}
		if !wildcardinformer.Synced(root.All()...) {
			return fmt.Errorf("root's objects were never read: the root shard (--root-shard-kubeconfig) must answer once")
		}
		if root.Shard(c.Options.ShardName) == nil {
			return fmt.Errorf("shard %q is not registered in root yet", c.Options.ShardName)
		}
		return nil
	})
}

// addRootShard runs, on a shard without root, the informers of root's
// objects and the registration of this shard's Shard in root.
func (c *Server) addRootShard(gs *genericapiserver.GenericAPIServer) error {
	root := c.Informers.root
	if root == nil {
		return nil
	}
	var systemAdmin atomic.Bool
	if err := gs.AddReadyzChecks(c.rootShardRegistered(&systemAdmin)); err != nil {
		return err
	}
	shard := bootstrap.Shard{Name: c.Options.ShardName, BaseURL: c.Options.BaseURL, ExternalURL: c.Options.ExternalURL}
	loopback := c.ControlPlane.Generic.LoopbackClientConfig
	return gs.AddPostStartHook("kplane-root-shard", func(hc genericapiserver.PostStartHookContext) error {
		ctx := klog.NewContext(hc, klog.Background().WithName("root-shard"))
		go root.Run(ctx)
		go func() { _ = root.Register(ctx, shard) }()
		go func() {
			_ = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
				if err := bootstrap.SystemAdmin(ctx, loopback); err != nil {
					klog.FromContext(ctx).Error(err, "Bootstrapping system:admin failed, retrying")
					return false, nil
				}
				systemAdmin.Store(true)
				return true, nil
			})
		}()
		return nil
	})
}

// globalInformers are the informers of objects other shards host, nil on
// the root shard: root's APIExports, APIResourceSchemas, WorkspaceTypes,
// ClusterRoles and ClusterRoleBindings.
type globalInformers struct {
	apiExports, apiResourceSchemas, workspaceTypes *wildcardinformer.Informer
	clusterRoles, clusterRoleBindings              *wildcardinformer.Informer
}

func (i wildcardInformers) global() globalInformers {
	if i.root == nil {
		return globalInformers{}
	}
	return globalInformers{
		apiExports: i.root.APIExports, apiResourceSchemas: i.root.APIResourceSchemas, workspaceTypes: i.root.WorkspaceTypes,
		clusterRoles: i.root.ClusterRoles, clusterRoleBindings: i.root.ClusterRoleBindings,
	}
}

// inOtherShardsWorkspaces returns the authorizer admission checks
// permissions in another workspace with ("use" of a WorkspaceType, "bind"
// of an APIExport). On the root shard it is chain. On a shard without root,
// checks in root, which this shard does not host, are judged as root's
// shard would judge them with root's RBAC (the global informers):
// system:masters and system:kcp:admin may, everyone else needs "access" to
// root and the permission itself.
func (i wildcardInformers) inOtherShardsWorkspaces(chain authorizer.Authorizer, rbac authorizer.Authorizer) authorizer.Authorizer {
	if i.root == nil {
		return chain
	}
	return rootChecks{chain: chain, rbac: rbac, hosted: func(c logicalcluster.Name) bool { return i.kcp.logicalCluster(c) != nil }}
}

// rootChecks judges requests in root on a shard without root by root's RBAC.
type rootChecks struct {
	chain, rbac authorizer.Authorizer
	hosted      func(logicalcluster.Name) bool
}

func (r rootChecks) Authorize(ctx context.Context, attr authorizer.Attributes) (authorizer.Decision, string, error) {
	cluster, _ := logicalcluster.ClusterFromContext(ctx)
	if cluster != logicalcluster.Root || r.hosted(cluster) {
		return r.chain.Authorize(ctx, attr)
	}
	u := attr.GetUser()
	if u == nil {
		return authorizer.DecisionDeny, workspacecontent.DenyReason, nil
	}
	for _, g := range u.GetGroups() {
		if g == user.SystemPrivilegedGroup || g == authorization.KCPAdminGroup {
			return authorizer.DecisionAllow, "", nil
		}
	}
	access := authorizer.AttributesRecord{User: u, Verb: "access", Path: "/"}
	if d, _, err := r.rbac.Authorize(ctx, access); err != nil || d != authorizer.DecisionAllow {
		return authorizer.DecisionDeny, workspacecontent.DenyReason, err
	}
	return r.rbac.Authorize(ctx, attr)
}

// ConditionsAwareAuthorize converts the unconditional decision.
func (r rootChecks) ConditionsAwareAuthorize(ctx context.Context, attr authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(r.Authorize(ctx, attr))
}

// EvaluateConditions is not supported.
func (rootChecks) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}
