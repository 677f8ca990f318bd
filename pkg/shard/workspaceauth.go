package shard

import (
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/tools/cache"

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

// forgetGoneWorkspaceTypes stops the authenticators of WorkspaceTypes,
// here or on other shards, that are deleted or name no configuration any
// more, and of those built from a deleted configuration, rather than
// keeping them until the server stops. Register before the informers run.
func (i *wildcardInformers) forgetGoneWorkspaceTypes(a *workspaceauth.Authenticator) {
	types := typeHandler{a: a}
	configs := configurationHandler{a: a}
	for _, inf := range []*wildcardinformer.Informer{i.kcp.workspaceTypes, i.global.WorkspaceTypes} {
		inf.AddHandler(types)
	}
	for _, inf := range []*wildcardinformer.Informer{i.kcp.workspaceAuthenticationConfigurations, i.global.WorkspaceAuthenticationConfigurations} {
		inf.AddHandler(configs)
	}
}

// typeHandler forgets a WorkspaceType's authenticators when it goes or
// stops naming configurations.
type typeHandler struct{ a *workspaceauth.Authenticator }

func (h typeHandler) OnAdd(interface{}) {}

func (h typeHandler) OnUpdate(_, obj interface{}) {
	if wt, ok := obj.(*tenancyv1alpha1.WorkspaceType); ok && len(wt.Spec.AuthenticationConfigurations) == 0 {
		h.forget(wt)
	}
}

func (h typeHandler) OnDelete(obj interface{}) {
	if wt, ok := deletedObject(obj).(*tenancyv1alpha1.WorkspaceType); ok {
		h.forget(wt)
	}
}

func (h typeHandler) forget(wt *tenancyv1alpha1.WorkspaceType) {
	if cluster, ok := logicalcluster.ObjectCluster(wt.Annotations); ok {
		h.a.ForgetType(cluster, wt.Name)
	}
}

// configurationHandler forgets the authenticators built from a deleted
// WorkspaceAuthenticationConfiguration.
type configurationHandler struct{ a *workspaceauth.Authenticator }

func (h configurationHandler) OnAdd(interface{})         {}
func (h configurationHandler) OnUpdate(_, _ interface{}) {}
func (h configurationHandler) OnDelete(obj interface{}) {
	wac, ok := deletedObject(obj).(*tenancyv1alpha1.WorkspaceAuthenticationConfiguration)
	if !ok {
		return
	}
	if cluster, ok := logicalcluster.ObjectCluster(wac.Annotations); ok {
		h.a.ForgetConfiguration(cluster, wac.Name)
	}
}

// deletedObject is the object of a delete event, also when the informer
// only knows its last state.
func deletedObject(obj interface{}) interface{} {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return obj
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
