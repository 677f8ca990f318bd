package shard

import (
	genericapiserver "k8s.io/apiserver/pkg/server"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/authentication/workspaceauth"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
	"github.com/shardplane/shardplane/pkg/workspacetypes"
)

// workspaceAuthSources read a hosted logical cluster's WorkspaceType
// (here or, through the cache server, on another shard) and the
// WorkspaceAuthenticationConfigurations beside it. They are called per
// request, after the informers exist.
func (i *wildcardInformers) workspaceAuthSources() workspaceauth.Sources {
	return workspaceauth.Sources{
		TypeOf: func(cluster logicalcluster.Name) (*tenancyv1alpha1.WorkspaceType, bool) {
			lc := i.kcp.logicalCluster(cluster)
			if lc == nil {
				return nil, false
			}
			ref, ok := workspacetypes.ParseTypeAnnotation(lc.Annotations[corev1alpha1.LogicalClusterTypeAnnotationKey])
			if !ok {
				return nil, false
			}
			wt, _, err := i.workspaceTypes().Resolve(ref, "")
			return wt, err == nil
		},
		Config: func(cluster logicalcluster.Name, name string) *tenancyv1alpha1.WorkspaceAuthenticationConfiguration {
			obj, exists, err := wildcardinformer.First(cluster, "", name, i.kcp.workspaceAuthenticationConfigurations, i.global.WorkspaceAuthenticationConfigurations)
			if err != nil || !exists {
				return nil
			}
			return obj.(*tenancyv1alpha1.WorkspaceAuthenticationConfiguration)
		},
	}
}

// installWorkspaceAuthentication lets the issuers of workspace types
// authenticate from the start of the server until it stops, when the
// WorkspaceAuthentication gate is on.
func (s *Server) installWorkspaceAuthentication(gs *genericapiserver.GenericAPIServer) error {
	if s.workspaceAuth == nil {
		return nil
	}
	return gs.AddPostStartHook("shardplane-workspace-authentication", func(hc genericapiserver.PostStartHookContext) error {
		go s.workspaceAuth.Run(hc)
		return nil
	})
}
