package e2esystem

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/test/framework"
)

// The tests of this file are kcp's test/e2e/shard tests (TestShardCordoning,
// TestShardHardWorkspaceLimit, TestShardReportsUsedWorkspaces) on a system
// of several shards: the operator writes a cordon or a limit on the Shard in
// root, the shard acknowledges it in its conditions, and the scheduler acts
// on it. kcp writes through its Admin workspace; we write the Shard in root,
// where kcp's older releases and its shard-limits proposal write it. They
// are not parallel: they cordon, fill and stop the shards every other test
// uses, and leave them open again.

// shardGet reads a Shard of root through the front-proxy.
func shardGet(ctx context.Context, t *testing.T, name string) (*corev1alpha1.Shard, error) {
	t.Helper()
	shard := &corev1alpha1.Shard{}
	err := kcp(t, sys.AdminConfig(t, "")).Get(ctx, logicalcluster.Root, kcpclient.Shards, name, shard)
	return shard, err
}

// updateShard applies mutate to a Shard of root, retrying on conflicts
// (the shards write their status every heartbeat).
func updateShard(t *testing.T, name string, mutate func(*corev1alpha1.Shard)) {
	t.Helper()
	c := kcp(t, sys.AdminConfig(t, ""))
	framework.Eventually(t, func(ctx context.Context) error {
		shard, err := shardGet(ctx, t, name)
		if err != nil {
			return err
		}
		mutate(shard)
		shard.APIVersion, shard.Kind = corev1alpha1.SchemeGroupVersion.String(), "Shard"
		return c.Update(ctx, logicalcluster.Root, kcpclient.Shards, name, shard, &corev1alpha1.Shard{})
	}, "update shard %s", name)
}

func cordon(s *corev1alpha1.Shard) {
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[corev1alpha1.ShardUnschedulableAnnotationKey] = "true"
}

func uncordon(s *corev1alpha1.Shard) {
	delete(s.Annotations, corev1alpha1.ShardUnschedulableAnnotationKey)
}

func hardLimit(n int64) func(*corev1alpha1.Shard) {
	return func(s *corev1alpha1.Shard) {
		s.Spec.ResourceLimits = &corev1alpha1.ShardResourceLimits{Hard: corev1.ResourceList{corev1alpha1.ResourceWorkspaces: *resource.NewQuantity(n, resource.DecimalSI)}}
	}
}

// reportedWorkspaces waits until a Shard reports more than above logical
// clusters in status.used[workspaces] and returns the number.
func reportedWorkspaces(t *testing.T, name string, above int64) int64 {
	t.Helper()
	var used int64
	framework.Eventually(t, func(ctx context.Context) error {
		shard, err := shardGet(ctx, t, name)
		if err != nil {
			return err
		}
		q, ok := shard.Status.Used[corev1alpha1.ResourceWorkspaces]
		if used = q.Value(); !ok || used <= above {
			return fmt.Errorf("status.used %v, want workspaces above %d", shard.Status.Used, above)
		}
		return nil
	}, "shard %s never reported more than %d workspaces", name, above)
	return used
}

// eventuallyShardCondition waits until a Shard's condition has status and,
// unless empty, reason and message.
func eventuallyShardCondition(t *testing.T, name string, typ conditionsv1alpha1.ConditionType, status corev1.ConditionStatus, reason, message string) *corev1alpha1.Shard {
	t.Helper()
	var shard *corev1alpha1.Shard
	framework.Eventually(t, func(ctx context.Context) error {
		var err error
		if shard, err = shardGet(ctx, t, name); err != nil {
			return err
		}
		cond := shard.Status.Conditions.Get(typ)
		switch {
		case cond == nil:
			return fmt.Errorf("no %s condition", typ)
		case cond.Status != status || (reason != "" && cond.Reason != reason) || (message != "" && cond.Message != message):
			return fmt.Errorf("%s is %s (%s: %q)", typ, cond.Status, cond.Reason, cond.Message)
		}
		return nil
	}, "shard %s never %s=%s %s %q", name, typ, status, reason, message)
	return shard
}

// createWorkspace creates a workspace below parent, on shard onShard when
// not empty.
func createWorkspace(ctx context.Context, t *testing.T, parent logicalcluster.Name, name, onShard string) {
	t.Helper()
	ws := &tenancyv1alpha1.Workspace{
		TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "Workspace"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
	}
	if onShard != "" {
		ws.Spec.Location = &tenancyv1alpha1.WorkspaceLocation{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1alpha1.ShardNameLabel: onShard}}}
	}
	if err := kcp(t, sys.AdminConfig(t, "")).Create(ctx, parent, workspacesGVR, ws, &tenancyv1alpha1.Workspace{}); err != nil {
		t.Fatalf("create workspace %s: %v", name, err)
	}
}

// eventuallyUnschedulable waits until a workspace waits in Scheduling with
// kcp's WorkspaceScheduled=False, reason Unschedulable, and a message
// holding every one of want.
func eventuallyUnschedulable(t *testing.T, parent logicalcluster.Name, name string, want ...string) {
	t.Helper()
	c := kcp(t, sys.AdminConfig(t, ""))
	framework.Eventually(t, func(ctx context.Context) error {
		ws := &tenancyv1alpha1.Workspace{}
		if err := c.Get(ctx, parent, workspacesGVR, name, ws); err != nil {
			return err
		}
		cond := ws.Status.Conditions.Get(tenancyv1alpha1.WorkspaceScheduled)
		if cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != tenancyv1alpha1.WorkspaceReasonUnschedulable {
			return fmt.Errorf("phase %q, WorkspaceScheduled %+v", ws.Status.Phase, cond)
		}
		for _, w := range want {
			if !strings.Contains(cond.Message, w) {
				return fmt.Errorf("message %q does not say %q", cond.Message, w)
			}
		}
		if ws.Status.Phase != corev1alpha1.LogicalClusterPhaseScheduling || ws.Spec.Cluster != "" {
			return fmt.Errorf("phase %q cluster %q, want Scheduling without a cluster", ws.Status.Phase, ws.Spec.Cluster)
		}
		return nil
	}, "workspace %s never waited with %q", name, want)
}

// eventuallyScheduledOn waits until a workspace is Ready on shard.
func eventuallyScheduledOn(t *testing.T, parent logicalcluster.Name, name, shard string) {
	t.Helper()
	c := kcp(t, sys.AdminConfig(t, ""))
	framework.Eventually(t, func(ctx context.Context) error {
		ws := &tenancyv1alpha1.Workspace{}
		if err := c.Get(ctx, parent, workspacesGVR, name, ws); err != nil {
			return err
		}
		if !ws.Status.Conditions.IsTrue(tenancyv1alpha1.WorkspaceScheduled) || ws.Status.Phase != corev1alpha1.LogicalClusterPhaseReady {
			return fmt.Errorf("phase %q, conditions %+v", ws.Status.Phase, ws.Status.Conditions)
		}
		if got := shardOf(ws); got != shard {
			t.Fatalf("workspace %s was placed on %s, want %s", name, got, shard)
		}
		return nil
	}, "workspace %s never Ready on %s", name, shard)
}

// openShards removes cordons and limits from root and shard-1 and waits
// until both take workspaces again, for the tests that follow.
func openShards(t *testing.T) {
	t.Helper()
	for _, name := range []string{corev1alpha1.RootShard, "shard-1"} {
		updateShard(t, name, func(s *corev1alpha1.Shard) { uncordon(s); s.Spec.ResourceLimits = nil })
		eventuallyShardCondition(t, name, corev1alpha1.ShardSchedulable, corev1.ConditionTrue, "", "")
		eventuallyShardCondition(t, name, corev1alpha1.ShardReady, corev1.ConditionTrue, "", "")
	}
}

// TestShardCordonAndHardLimitKeepWorkspacesOff: a cordoned shard gets no
// workspace; with every shard cordoned or full a workspace waits in
// Scheduling saying why, and is placed as soon as a hard limit is raised;
// the raised limit is honoured in turn; a shard at its soft limit is
// passed over while another is under its own.
func TestShardCordonAndHardLimitKeepWorkspacesOff(t *testing.T) {
	if shards < 2 {
		t.Skip("needs a second shard (SHARDPLANE_E2E_SYSTEM_SHARDS >= 2)")
	}
	// Not parallel: see the top of the file.
	ctx := testContext(t)
	// Deferred, not a cleanup: the test's context still runs.
	defer openShards(t)
	// The parent lives on root, whose scheduler reads the Shards from its
	// own storage; shard-1 holds a workspace, as a hard limit of 0 is none.
	org := readyWorkspace(ctx, t, "root", uniqueName("placement"), "organization", corev1alpha1.RootShard)
	parent := logicalcluster.Name(org.Spec.Cluster)
	before := reportedWorkspaces(t, "shard-1", -1)
	readyWorkspace(ctx, t, string(parent), "on-shard-1", "", "shard-1")
	t.Log("shard-1 reports the workspace added to it in status.used")
	reportedWorkspaces(t, "shard-1", before)

	t.Log("Cordon shard-1: the shard acknowledges with Schedulable=False, Cordoned")
	updateShard(t, "shard-1", cordon)
	eventuallyShardCondition(t, "shard-1", corev1alpha1.ShardSchedulable, corev1.ConditionFalse, corev1alpha1.ShardReasonCordoned, "")
	for i := range 4 {
		ws := readyWorkspace(ctx, t, string(parent), fmt.Sprintf("open-%d", i), "", "")
		if shardOf(ws) != corev1alpha1.RootShard {
			t.Errorf("workspace %s went to the cordoned %s", ws.Name, shardOf(ws))
		}
	}

	t.Log("Cordon root too: a new workspace fits nowhere and says why")
	updateShard(t, corev1alpha1.RootShard, cordon)
	eventuallyShardCondition(t, corev1alpha1.RootShard, corev1alpha1.ShardSchedulable, corev1.ConditionFalse, corev1alpha1.ShardReasonCordoned, "")
	createWorkspace(ctx, t, parent, "waiting", "")
	eventuallyUnschedulable(t, parent, "waiting", "No available shards to schedule the workspace",
		`shard "root" is cordoned`, `shard "shard-1" is cordoned`)

	t.Log("Pin shard-1's hard limit to the count it reports and uncordon it: still no room")
	used := reportedWorkspaces(t, "shard-1", -1)
	updateShard(t, "shard-1", hardLimit(used))
	eventuallyShardCondition(t, "shard-1", corev1alpha1.ShardResourceLimitsApplied, corev1.ConditionTrue, "", fmt.Sprintf("soft/hard: workspaces=-/%d", used))
	updateShard(t, "shard-1", uncordon)
	eventuallyShardCondition(t, "shard-1", corev1alpha1.ShardSchedulable, corev1.ConditionTrue, "", "")
	eventuallyUnschedulable(t, parent, "waiting", `shard "root" is cordoned`, fmt.Sprintf(`shard "shard-1" is at its hard limit of %d workspaces`, used))

	out := kubectl(ctx, t, sys.URL(t)+"/clusters/root", "get", "shards")
	row := tableRow(t, out, "shard-1")
	if got, want := fmt.Sprint(row["SCHEDULABLE"], row["READY"], " ", row["WORKSPACES"], "/", row["SOFT"], "/", row["HARD"]), fmt.Sprintf("TrueTrue %d//%d", used, used); got != want {
		t.Errorf("kubectl get shards: shard-1 shows %q, want %q (schedulable, ready, workspaces/soft/hard):\n%s", got, want, out)
	}

	t.Log("Raise the hard limit by one: the waiting workspace is placed on shard-1 at once")
	updateShard(t, "shard-1", hardLimit(used+1))
	eventuallyScheduledOn(t, parent, "waiting", "shard-1")

	t.Log("The raised limit is honoured: the next workspace waits")
	createWorkspace(ctx, t, parent, "next", "")
	eventuallyUnschedulable(t, parent, "next", fmt.Sprintf(`shard "shard-1" is at its hard limit of %d workspaces`, used+1))

	t.Log("Lift the limit: the shard acknowledges, and the workspace is placed")
	updateShard(t, "shard-1", func(s *corev1alpha1.Shard) { s.Spec.ResourceLimits = nil })
	eventuallyShardCondition(t, "shard-1", corev1alpha1.ShardResourceLimitsApplied, corev1.ConditionTrue, "", "no limits configured")
	eventuallyScheduledOn(t, parent, "next", "shard-1")

	t.Log("Put root at its soft limit and open it: shard-1, under none, takes every new workspace, where least loaded alone would alternate")
	rootUsed := reportedWorkspaces(t, corev1alpha1.RootShard, 0)
	updateShard(t, corev1alpha1.RootShard, func(s *corev1alpha1.Shard) {
		uncordon(s)
		s.Spec.ResourceLimits = &corev1alpha1.ShardResourceLimits{Soft: corev1.ResourceList{corev1alpha1.ResourceWorkspaces: *resource.NewQuantity(rootUsed, resource.DecimalSI)}}
	})
	eventuallyShardCondition(t, corev1alpha1.RootShard, corev1alpha1.ShardResourceLimitsApplied, corev1.ConditionTrue, "", fmt.Sprintf("soft/hard: workspaces=%d/-", rootUsed))
	eventuallyShardCondition(t, corev1alpha1.RootShard, corev1alpha1.ShardSchedulable, corev1.ConditionTrue, "", "")
	for i := range 4 {
		ws := readyWorkspace(ctx, t, string(parent), fmt.Sprintf("soft-%d", i), "", "")
		if shardOf(ws) != "shard-1" {
			t.Errorf("workspace %s went to %s, at its soft limit, while shard-1 was under none", ws.Name, shardOf(ws))
		}
	}
}

// TestStoppedShardIsMarkedNotReadyAndGetsNoWorkspaces: a shard that stops
// reporting is marked Ready=False, HeartbeatMissed, within seconds; new
// workspaces go elsewhere, one that can only go there waits saying so, and
// is placed there once the shard is back.
func TestStoppedShardIsMarkedNotReadyAndGetsNoWorkspaces(t *testing.T) {
	if shards < 2 {
		t.Skip("needs a second shard (SHARDPLANE_E2E_SYSTEM_SHARDS >= 2)")
	}
	// Not parallel: it stops a shard the other tests use.
	ctx := testContext(t)
	org := readyWorkspace(ctx, t, "root", uniqueName("liveness"), "organization", corev1alpha1.RootShard)
	parent := logicalcluster.Name(org.Spec.Cluster)
	eventuallyShardCondition(t, "shard-1", corev1alpha1.ShardReady, corev1.ConditionTrue, "", "")

	sys.StopProcess(t, "shard-1")
	restarted := false
	defer func() {
		if !restarted {
			sys.RestartExited(t, "shard-1", sys.ShardURL(t, "shard-1")+"/livez")
		}
		eventuallyShardCondition(t, "shard-1", corev1alpha1.ShardReady, corev1.ConditionTrue, "", "")
	}()
	shard := eventuallyShardCondition(t, "shard-1", corev1alpha1.ShardReady, corev1.ConditionFalse, corev1alpha1.ShardReasonHeartbeatMissed, "")
	t.Logf("shard-1 is not ready: %s", shard.Status.Conditions.Get(corev1alpha1.ShardReady).Message)

	for i := range 4 {
		ws := readyWorkspace(ctx, t, string(parent), fmt.Sprintf("while-down-%d", i), "", "")
		if shardOf(ws) != corev1alpha1.RootShard {
			t.Errorf("workspace %s went to the stopped %s", ws.Name, shardOf(ws))
		}
	}
	createWorkspace(ctx, t, parent, "pinned", "shard-1")
	eventuallyUnschedulable(t, parent, "pinned", `shard "shard-1" is not ready: the shard has not reported`)

	sys.RestartExited(t, "shard-1", sys.ShardURL(t, "shard-1")+"/livez")
	restarted = true
	eventuallyShardCondition(t, "shard-1", corev1alpha1.ShardReady, corev1.ConditionTrue, "", "")
	eventuallyScheduledOn(t, parent, "pinned", "shard-1")
}

// tableRow returns the cells of the row named name of kubectl's table
// output, by column header; empty cells are "".
func tableRow(t *testing.T, out, name string) map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	header := lines[0]
	var starts []int
	for i := range header {
		if header[i] != ' ' && (i == 0 || strings.HasSuffix(header[:i], "   ")) {
			starts = append(starts, i)
		}
	}
	for _, line := range lines[1:] {
		if !strings.HasPrefix(line, name+" ") {
			continue
		}
		row := map[string]string{}
		for i, start := range starts {
			end, lineEnd := len(header), len(line)
			if i+1 < len(starts) {
				end, lineEnd = starts[i+1], min(starts[i+1], len(line))
			}
			if start < len(line) {
				row[strings.TrimSpace(header[start:end])] = strings.TrimSpace(line[start:lineEnd])
			}
		}
		return row
	}
	t.Fatalf("no row %s in:\n%s", name, out)
	return nil
}
