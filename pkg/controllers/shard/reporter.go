package shard

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/shardlookup"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// reportSpacing keeps a burst of changes (a thousand new logical clusters)
// to a few writes of the Shard.
const reportSpacing = 250 * time.Millisecond

// Reporter writes this shard's status onto its Shard object in root: every
// heartbeat interval, and soon after the number of its logical clusters or
// its Shard's annotations or limits change.
type Reporter struct {
	name     string
	interval time.Duration
	// count returns the logical clusters this shard hosts.
	count func() int
	// get reads the Shard from root; updateStatus writes its status.
	get          func(ctx context.Context) (*corev1alpha1.Shard, error)
	updateStatus func(ctx context.Context, shard *corev1alpha1.Shard) error
	now          func() time.Time
	changed      chan struct{}
}

// ReporterConfig holds the Reporter's dependencies.
type ReporterConfig struct {
	// ShardName is this shard.
	ShardName string
	// Interval is the heartbeat interval.
	Interval time.Duration
	// LogicalClusters is the informer of this shard's LogicalClusters.
	LogicalClusters *wildcardinformer.Informer
	// Shards is an informer of root's Shards (root's own, or the cache
	// server's copies): changes of this shard's bring a report.
	Shards *wildcardinformer.Informer
	// Root writes into the root logical cluster on the root shard.
	Root *kcpclient.Client
}

// NewReporter returns the reporter and registers its handlers; call before
// the informers run.
func NewReporter(cfg ReporterConfig) *Reporter {
	r := &Reporter{
		name: cfg.ShardName, interval: cfg.Interval,
		count: func() int { return len(cfg.LogicalClusters.Indexer().ListKeys()) },
		get: func(ctx context.Context) (*corev1alpha1.Shard, error) {
			shard := &corev1alpha1.Shard{}
			return shard, cfg.Root.Get(ctx, logicalcluster.Root, kcpclient.Shards, cfg.ShardName, shard)
		},
		updateStatus: func(ctx context.Context, shard *corev1alpha1.Shard) error {
			shard.APIVersion, shard.Kind = corev1alpha1.SchemeGroupVersion.String(), "Shard"
			return cfg.Root.Update(ctx, logicalcluster.Root, kcpclient.Shards, shard.Name, shard, &corev1alpha1.Shard{}, "status")
		},
		now:     time.Now,
		changed: make(chan struct{}, 1),
	}
	// Only additions and deletions change the count.
	counted := func(interface{}) { r.Changed() }
	cfg.LogicalClusters.AddHandler(changeHandler{add: counted, del: counted})
	own := func(obj interface{}) {
		if s, ok := obj.(*corev1alpha1.Shard); ok && s.Name == r.name && shardlookup.InRoot(s) {
			r.Changed()
		}
	}
	cfg.Shards.AddHandler(changeHandler{add: own, update: own})
	return r
}

// Changed asks for a report soon.
func (r *Reporter) Changed() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// Run reports until ctx is done; workers is ignored: one report at a time.
func (r *Reporter) Run(ctx context.Context, _ int) {
	logger := klog.FromContext(ctx).WithValues("shard", r.name)
	ticker := time.NewTicker(r.interval)
	defer ticker.Stop()
	failures := 0
	for {
		heartbeat := true
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-r.changed:
			heartbeat = false
		}
		switch err := r.report(ctx, heartbeat); {
		case err == nil || ctx.Err() != nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			failures = 0
		default:
			// Root being away is expected at times: say so now and then.
			switch {
			case failures%15 != 0:
			case apierrors.IsForbidden(err):
				logger.Error(err, "Root refuses this shard's status report: the identity of --root-shard-kubeconfig must be system:masters; without it the shard reports neither liveness nor its count of workspaces")
			default:
				logger.Error(err, "Reporting the Shard's status failed; root marks the shard not Ready if this goes on", "failures", failures+1)
			}
			failures++
		}
		if !heartbeat {
			select {
			case <-ctx.Done():
				return
			case <-time.After(reportSpacing):
			}
		}
	}
}

// report writes the status; unless heartbeat, only when more than the
// heartbeat time changed. A Shard not registered yet is NotFound.
func (r *Reporter) report(ctx context.Context, heartbeat bool) error {
	shard, err := r.get(ctx)
	if err != nil {
		return err
	}
	before := shard.Status.DeepCopy()
	reportStatus(shard, int64(r.count()), metav1.NewTime(r.now()))
	if !heartbeat && sameReport(*before, shard.Status) {
		return nil
	}
	return r.updateStatus(ctx, shard)
}

// changeHandler calls its functions on additions, updates and deletions;
// nil ones are skipped.
type changeHandler struct {
	add, update, del func(obj interface{})
}

func (h changeHandler) OnAdd(obj interface{}) {
	if h.add != nil {
		h.add(obj)
	}
}

func (h changeHandler) OnUpdate(_, obj interface{}) {
	if h.update != nil {
		h.update(obj)
	}
}

func (h changeHandler) OnDelete(obj interface{}) {
	if h.del != nil {
		h.del(obj)
	}
}
