package shard

import (
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/klog/v2"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/objectcount"
)

// installObjectCounts counts the objects of the logical clusters while a
// total object limit applies (kcp's --logical-cluster-total-object-limit
// and core.kcp.io/max-total-objects).
func (s *Server) installObjectCounts(gs *genericapiserver.GenericAPIServer) error {
	if s.Options.etcdClient == nil {
		return nil
	}
	scanner := &objectcount.Scanner{
		KV:       s.Options.etcdClient.KV(),
		Prefix:   s.Options.ControlPlane.Etcd.StorageConfig.Prefix,
		Interval: s.Options.kcpStart.ObjectCountScanInterval,
		Registry: s.objectCounts,
		Clusters: func() ([]objectcount.Cluster, error) {
			objs := s.Informers.kcp.logicalClusters.Indexer().List()
			clusters := make([]objectcount.Cluster, 0, len(objs))
			for _, o := range objs {
				lc := o.(*corev1alpha1.LogicalCluster)
				if c, ok := logicalcluster.ObjectCluster(lc.Annotations); ok {
					clusters = append(clusters, objectcount.Cluster{Name: c, Annotations: lc.Annotations})
				}
			}
			return clusters, nil
		},
	}
	return gs.AddPostStartHook("shardplane-object-counts", func(hc genericapiserver.PostStartHookContext) error {
		go scanner.Run(klog.NewContext(hc, klog.Background().WithName("object-counts")))
		return nil
	})
}
