package workspace

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
	"github.com/shardplane/shardplane/pkg/workspacetypes"
)

// ClusterName derives a logical cluster name from a workspace's UID: 16
// base36 characters of its SHA-224, so retries after a crash create the same
// cluster instead of a second one.
func ClusterName(uid string) logicalcluster.Name {
	sum := sha256.Sum224([]byte(uid))
	s := new(big.Int).SetBytes(sum[:]).Text(36)
	for len(s) < 16 {
		s = "0" + s
	}
	return logicalcluster.Name(s[:16])
}

// reconcileScheduling places an unscheduled workspace on a shard.
func (c *Controller) reconcileScheduling(ctx context.Context, parent logicalcluster.Name, ws *tenancyv1alpha1.Workspace) error {
	parentObj, exists, err := c.logicalClusters.Get(parent, "", corev1alpha1.LogicalClusterName)
	if err != nil {
		return err
	}
	if !exists {
		return loop.RequeueAfter(time.Second)
	}
	parentLC := parentObj.(*corev1alpha1.LogicalCluster)
	parentPath := logicalcluster.Path(parentLC.Annotations[logicalcluster.PathAnnotationKey])
	if parentPath == "" {
		parentPath = parent.Path()
	}

	if ws.Spec.Type == nil {
		return loop.RequeueAfter(time.Second)
	}
	wt, ref, err := c.types.Resolve(*ws.Spec.Type, parentPath)
	if err != nil {
		return c.setUnschedulable(ctx, parent, ws, err.Error())
	}
	types, _, err := c.types.ExtendedTypes(wt, ref)
	if err != nil {
		return c.setUnschedulable(ctx, parent, ws, err.Error())
	}
	initializers, terminators := workspacetypes.Lifecycle(types)

	// A placement on another shard is recorded on the Workspace before
	// anything is created there, as kcp does: a retry (an update conflict,
	// a restart) then creates the LogicalCluster on the same shard instead
	// of a second one on whichever shard is least loaded by then. On this
	// shard the LogicalCluster is created first and the placement written
	// with spec.cluster in one update: a retry finds the cluster here (see
	// placement), so the Workspace takes one write less and no informer
	// round trip before its cluster exists.
	key := wildcardinformer.Key(parent, "", ws.Name)
	shardName, cluster := shardOf(ws), logicalcluster.Name(ws.Annotations[tenancyv1alpha1.WorkspaceClusterAnnotationKey])
	if shardName == "" || cluster == "" {
		picked, err := c.placement(key, ws)
		if invalid := (invalidSelectorError{}); errors.As(err, &invalid) {
			return c.setUnschedulable(ctx, parent, ws, invalid.Error())
		}
		if none := (noShardError{}); errors.As(err, &none) {
			return c.setUnschedulable(ctx, parent, ws, none.Error())
		}
		if err != nil {
			return err
		}
		shardName, cluster = picked.Name, ClusterName(string(ws.UID))
		setScheduledAnnotations(ws, shardName, cluster)
		if shardName != c.shardName {
			updated, err := c.update(ctx, parent, ws)
			if err != nil {
				c.load.forget(key)
				return err
			}
			ws = updated
		}
	}
	shard := c.shard(shardName)
	if shard == nil {
		c.load.forget(key)
		return c.setUnschedulable(ctx, parent, ws, fmt.Sprintf("shard %q the workspace was placed on is not registered", shardName))
	}

	path := parentPath.Join(ws.Name)
	lc := &corev1alpha1.LogicalCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: corev1alpha1.SchemeGroupVersion.String(), Kind: "LogicalCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: corev1alpha1.LogicalClusterName, Annotations: logicalClusterAnnotations(ws, parentLC, path, ref)},
		Spec: corev1alpha1.LogicalClusterSpec{
			Owner: &corev1alpha1.LogicalClusterOwner{
				APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Resource: "workspaces",
				Name: ws.Name, Cluster: string(parent), UID: ws.UID,
			},
			Initializers: initializers,
			Terminators:  terminators,
		},
	}
	// A failed create keeps the assumed placement: the cluster may exist
	// all the same (a lost response), and the retry goes to the same shard.
	if err := c.createLogicalCluster(ctx, shard, cluster, lc); err != nil {
		return fmt.Errorf("create LogicalCluster %s on shard %s: %w", cluster, shard.Name, err)
	}

	ws.Spec.Cluster = string(cluster)
	ws.Spec.URL = path.URL(shard.Spec.ExternalURL)
	ws.Spec.Type = &ref
	for k, v := range wt.Spec.AdditionalWorkspaceLabels {
		if ws.Labels == nil {
			ws.Labels = map[string]string{}
		}
		ws.Labels[k] = v
	}
	if region, ok := shard.Labels[corev1alpha1.RegionLabel]; ok {
		if ws.Labels == nil {
			ws.Labels = map[string]string{}
		}
		ws.Labels[corev1alpha1.RegionLabel] = region
	}
	// The LogicalCluster's events bring the workspace back for its phase.
	_, err = c.update(ctx, parent, ws)
	return err
}

// createLogicalCluster creates the LogicalCluster of a new workspace on
// its shard, leaving an existing one alone. On this shard it is created
// in-process when the shard gives the means: it is the first object of a
// new logical cluster, which no admission plugin of that cluster has a say
// on, as for the cluster's bootstrap content. Elsewhere it is created
// through the shard's baseURL.
func (c *Controller) createLogicalCluster(ctx context.Context, shard *corev1alpha1.Shard, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) error {
	if shard.Name == c.shardName && c.createLocal != nil {
		return c.createLocal(ctx, cluster, lc)
	}
	client, err := c.shardClient(shard)
	if err != nil {
		return err
	}
	if err := client.Create(ctx, cluster, kcpclient.LogicalClusters, lc, &corev1alpha1.LogicalCluster{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// placement returns the shard of a workspace whose placement is not
// recorded: the one this controller assumed for it already (its
// LogicalCluster may exist there), this shard when it holds the
// workspace's LogicalCluster (created before a restart), else the least
// loaded match (see pickShard). The workspace is assumed placed there until
// the informer shows it scheduled.
func (c *Controller) placement(key string, ws *tenancyv1alpha1.Workspace) (*corev1alpha1.Shard, error) {
	if name, ok := c.load.assumedShard(key); ok {
		if shard := c.shard(name); shard != nil {
			return shard, nil
		}
	}
	if obj, exists, _ := c.logicalClusters.Get(ClusterName(string(ws.UID)), "", corev1alpha1.LogicalClusterName); exists {
		if lc, ok := obj.(*corev1alpha1.LogicalCluster); ok && lc.Spec.Owner != nil && lc.Spec.Owner.UID == ws.UID {
			if shard := c.shard(c.shardName); shard != nil {
				c.load.assume(key, shard.Name)
				return shard, nil
			}
		}
	}
	return c.pickShard(key, ws)
}

// logicalClusterAnnotations are the annotations of the LogicalCluster of a
// new workspace: its path and type, its creator, and the required groups the
// workspace carries (admission gave it its parent's, or system:masters
// chose them; a workspace admitted before that inherits its parent's here).
func logicalClusterAnnotations(ws *tenancyv1alpha1.Workspace, parent *corev1alpha1.LogicalCluster, path logicalcluster.Path, ref tenancyv1alpha1.WorkspaceTypeReference) map[string]string {
	annotations := map[string]string{
		logicalcluster.PathAnnotationKey:             string(path),
		corev1alpha1.LogicalClusterTypeAnnotationKey: workspacetypes.TypeAnnotation(ref),
	}
	if groups, ok := ws.Annotations[corev1alpha1.RequiredGroupsAnnotationKey]; ok {
		annotations[corev1alpha1.RequiredGroupsAnnotationKey] = groups
	} else if groups, ok := parent.Annotations[corev1alpha1.RequiredGroupsAnnotationKey]; ok {
		annotations[corev1alpha1.RequiredGroupsAnnotationKey] = groups
	}
	if v := ws.Annotations[corev1alpha1.ExperimentalWorkspaceOwnerAnnotationKey]; v != "" {
		annotations[corev1alpha1.ExperimentalWorkspaceOwnerAnnotationKey] = v
	}
	return annotations
}

// setScheduledAnnotations records where a workspace was placed, as kcp
// writes it: the shard's name (read by kcp's client libraries), its hash,
// and the logical cluster.
func setScheduledAnnotations(ws *tenancyv1alpha1.Workspace, shardName string, cluster logicalcluster.Name) {
	if ws.Annotations == nil {
		ws.Annotations = map[string]string{}
	}
	ws.Annotations[corev1alpha1.ShardAnnotationKey] = shardName
	ws.Annotations[tenancyv1alpha1.WorkspaceShardHashAnnotationKey] = tenancyv1alpha1.ShardHash(shardName)
	ws.Annotations[tenancyv1alpha1.WorkspaceClusterAnnotationKey] = string(cluster)
}

// pickShard chooses, among the shards that match the workspace's selector
// and take a new workspace (see rankShards: not cordoned, not unready,
// under their hard limit; those under their soft limit first), the least
// loaded, and assumes the workspace of key placed there (see shardLoad). A
// selector that does not parse is an invalidSelectorError; no shard taking
// the workspace is a noShardError that says why.
func (c *Controller) pickShard(key string, ws *tenancyv1alpha1.Workspace) (*corev1alpha1.Shard, error) {
	selector := labels.Everything()
	if ws.Spec.Location != nil && ws.Spec.Location.Selector != nil {
		s, err := metav1.LabelSelectorAsSelector(ws.Spec.Location.Selector)
		if err != nil {
			return nil, invalidSelectorError{err}
		}
		selector = s
	}
	shards, err := c.shards.List()
	if err != nil {
		return nil, err
	}
	var candidates []*corev1alpha1.Shard
	for _, s := range shards {
		if selector.Matches(labels.Set(s.Labels)) {
			candidates = append(candidates, s)
		}
	}
	if len(candidates) == 0 {
		return nil, noShardError{"no shard matches spec.location.selector"}
	}
	fitting, refused := rankShards(candidates, c.load.used)
	if len(fitting) == 0 {
		return nil, noShardError{unschedulableMessage(refused)}
	}
	return c.load.pick(key, fitting), nil
}

// invalidSelectorError is a spec.location.selector that does not parse.
type invalidSelectorError struct{ err error }

func (e invalidSelectorError) Error() string {
	return "invalid spec.location.selector: " + e.err.Error()
}

// setUnschedulable keeps a workspace in Scheduling with kcp's condition
// WorkspaceScheduled=False, reason Unschedulable, saying why. Shard changes
// retry it (see waiting), and so does a slow requeue.
func (c *Controller) setUnschedulable(ctx context.Context, parent logicalcluster.Name, ws *tenancyv1alpha1.Workspace, msg string) error {
	c.waiting.Store(wildcardinformer.Key(parent, "", ws.Name), struct{}{})
	cond := conditionsv1alpha1.Condition{
		Type: tenancyv1alpha1.WorkspaceScheduled, Status: corev1.ConditionFalse,
		Severity: conditionsv1alpha1.ConditionSeverityError, Reason: tenancyv1alpha1.WorkspaceReasonUnschedulable, Message: msg,
	}
	if existing := ws.Status.Conditions.Get(cond.Type); existing == nil || existing.Message != msg || ws.Status.Phase != corev1alpha1.LogicalClusterPhaseScheduling {
		conditionsv1alpha1.Set(ws, cond)
		ws.Status.Phase = corev1alpha1.LogicalClusterPhaseScheduling
		if _, err := c.update(ctx, parent, ws, "status"); err != nil {
			return err
		}
	}
	return loop.RequeueAfter(5 * time.Second)
}
