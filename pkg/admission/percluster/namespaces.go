package percluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// requestNamespaces is a clientset whose namespace reads go to the logical
// cluster of the request being admitted (in ctx), not to the cluster of the
// instance: the upstream plugins read the namespace of the object they
// judge with it when their namespace cache misses, and an APIExport's
// configuration judges objects in its consumers' namespaces (which the
// instance of an export on another shard never has cached).
type requestNamespaces struct {
	kubernetes.Interface
	// shard is a core/v1 REST client at the shard's base URL.
	shard rest.Interface
}

func (c requestNamespaces) CoreV1() corev1client.CoreV1Interface {
	return requestCoreV1{CoreV1Interface: c.Interface.CoreV1(), shard: c.shard}
}

type requestCoreV1 struct {
	corev1client.CoreV1Interface
	shard rest.Interface
}

func (c requestCoreV1) Namespaces() corev1client.NamespaceInterface {
	return requestNamespaceReads{NamespaceInterface: c.CoreV1Interface.Namespaces(), shard: c.shard}
}

type requestNamespaceReads struct {
	corev1client.NamespaceInterface
	shard rest.Interface
}

// Get reads the namespace in the request's logical cluster.
func (n requestNamespaceReads) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Namespace, error) {
	cluster, ok := logicalcluster.ClusterFromContext(ctx)
	if !ok || cluster.IsWildcard() {
		return n.NamespaceInterface.Get(ctx, name, opts)
	}
	ns := &corev1.Namespace{}
	err := n.shard.Get().AbsPath(cluster.RequestPath(), "api", "v1", "namespaces", name).
		VersionedParams(&opts, scheme.ParameterCodec).Do(ctx).Into(ns)
	return ns, err
}
