package shard

import (
	"k8s.io/apiserver/pkg/registry/generic"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	flowcontrolrest "k8s.io/kubernetes/pkg/registry/flowcontrol/rest"

	"github.com/shardplane/shardplane/pkg/fairness"
	kstorage "github.com/shardplane/shardplane/pkg/storage"
)

// configureFairness turns on API Priority and Fairness keyed by workspace
// (pkg/fairness) unless --enable-priority-and-fairness=false; upstream's own
// APF, which would read the configuration of every logical cluster, stays
// off either way.
func (c *Config) configureFairness(genericConfig *genericapiserver.Config, enabled bool) error {
	if !enabled {
		return nil
	}
	controller, err := fairness.New(genericConfig.LoopbackClientConfig, genericConfig.MaxRequestsInFlight+genericConfig.MaxMutatingRequestsInFlight, kstorage.Lists)
	if err != nil {
		return err
	}
	c.fairness = controller
	genericConfig.FlowControl = controller.Interface
	genericConfig.StorageObjectCountTracker = fairness.NoObjectCounts{}
	return nil
}

// installFairness keeps the shard's configuration in place once it serves.
func (s *Server) installFairness(gs *genericapiserver.GenericAPIServer) error {
	if s.fairness == nil {
		return nil
	}
	return gs.AddPostStartHook("shardplane-priority-and-fairness-config", func(hc genericapiserver.PostStartHookContext) error {
		s.fairness.Start(hc)
		return nil
	})
}

// flowcontrolStorage serves FlowSchemas and PriorityLevelConfigurations
// (in fairness.ConfigCluster only, see fairness.WithConfigHidden) without
// upstream's post-start hook, which would write kube-apiserver's suggested
// configuration where the shard keeps its own.
type flowcontrolStorage struct {
	provider flowcontrolrest.RESTStorageProvider
}

func (f flowcontrolStorage) GroupName() string { return f.provider.GroupName() }

func (f flowcontrolStorage) NewRESTStorage(apiResourceConfigSource serverstorage.APIResourceConfigSource, restOptionsGetter generic.RESTOptionsGetter) (genericapiserver.APIGroupInfo, error) {
	return f.provider.NewRESTStorage(apiResourceConfigSource, restOptionsGetter)
}
