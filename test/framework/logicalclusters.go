package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// logicalClustersGVR is kcp's LogicalCluster resource. Its singleton
// "cluster" inside a logical cluster makes that cluster exist: without it,
// users outside system:masters get "workspace access not permitted".
var logicalClustersGVR = schema.GroupVersionResource{Group: "core.kcp.io", Version: "v1alpha1", Resource: "logicalclusters"}

// NewLogicalCluster creates a logical cluster with a fresh name (see
// UniqueClusterName) and returns the name.
func (s *Shard) NewLogicalCluster(t testing.TB, prefix string) string {
	t.Helper()
	name := UniqueClusterName(prefix)
	s.CreateLogicalCluster(t, name)
	return name
}

// CreateLogicalCluster makes a logical cluster exist as kcp's scheduler
// does: shard-admin creates its LogicalCluster "cluster". It then waits
// until kcp-admin may read that LogicalCluster and sees it Ready, by when
// the shard has created the cluster's default namespace.
func (s *Shard) CreateLogicalCluster(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	lc := &unstructured.Unstructured{}
	lc.SetAPIVersion(logicalClustersGVR.GroupVersion().String())
	lc.SetKind("LogicalCluster")
	lc.SetName("cluster")
	if _, err := s.dynamicClient(t, "shard-base", name).Resource(logicalClustersGVR).Create(ctx, lc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create LogicalCluster of %s as shard-admin: %v", name, err)
	}

	asAdmin := s.dynamicClient(t, "base", name).Resource(logicalClustersGVR)
	err := PollEvery(ctx, 100*time.Millisecond, 0, func(ctx context.Context) error {
		got, err := asAdmin.Get(ctx, "cluster", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if phase, _, _ := unstructured.NestedString(got.Object, "status", "phase"); phase != "Ready" {
			return fmt.Errorf("phase %q", phase)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("logical cluster %s never became Ready for kcp-admin: %v", name, err)
	}
}

func (s *Shard) dynamicClient(t testing.TB, context, cluster string) dynamic.Interface {
	t.Helper()
	c, err := dynamic.NewForConfig(s.ClusterConfig(t, context, cluster))
	if err != nil {
		t.Fatalf("dynamic client for %s: %v", cluster, err)
	}
	return c
}
