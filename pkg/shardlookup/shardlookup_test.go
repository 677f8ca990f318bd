package shardlookup

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

type countingHandler struct{ updates int }

func (h *countingHandler) OnAdd(interface{})                 {}
func (h *countingHandler) OnUpdate(interface{}, interface{}) { h.updates++ }
func (h *countingHandler) OnDelete(interface{})              {}

func TestSkipStatusUpdatesPassesOnlySpecAndMetadataChanges(t *testing.T) {
	h := &countingHandler{}
	skip := SkipStatusUpdates(h)
	old := &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "1"}, Spec: corev1alpha1.ShardSpec{BaseURL: "https://a"}}

	heartbeat := old.DeepCopy()
	heartbeat.ResourceVersion = "2"
	now := metav1.Now()
	heartbeat.Status.LastHeartbeatTime = &now
	skip.OnUpdate(old, heartbeat)
	if h.updates != 0 {
		t.Fatalf("a status-only update was passed on")
	}

	cordoned := heartbeat.DeepCopy()
	cordoned.Annotations = map[string]string{corev1alpha1.ShardUnschedulableAnnotationKey: "true"}
	skip.OnUpdate(heartbeat, cordoned)
	moved := cordoned.DeepCopy()
	moved.Spec.BaseURL = "https://b"
	skip.OnUpdate(cordoned, moved)
	if h.updates != 2 {
		t.Errorf("%d updates passed on, want the annotation and the spec change", h.updates)
	}
}

func TestInRootIsOnlyTheShardsOfRoot(t *testing.T) {
	inRoot := &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: "a", Annotations: map[string]string{logicalcluster.AnnotationKey: "root"}}}
	elsewhere := &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: "a", Annotations: map[string]string{logicalcluster.AnnotationKey: "2x8k0a9"}}}
	if !InRoot(inRoot) || InRoot(elsewhere) || InRoot(&corev1alpha1.Shard{}) || InRoot("a") {
		t.Errorf("InRoot: root %v, elsewhere %v, unannotated %v", InRoot(inRoot), InRoot(elsewhere), InRoot(&corev1alpha1.Shard{}))
	}
}
