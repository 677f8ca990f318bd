// Package resourcequota is Kubernetes' ResourceQuota admission per logical
// cluster: a create that would take a namespace's usage over a quota of the
// request's own cluster is refused with upstream's 403 "exceeded quota",
// and the usage it adds is charged to the quotas' status right away, as
// upstream's plugin does. As in kcp, a quota in namespace "admin" annotated
// experimental.quota.kcp.io/cluster-scoped=true limits the whole logical
// cluster, cluster-scoped objects included.
//
// Upstream's plugin reads quotas through a lister of one cluster and checks
// them on worker goroutines that lose the request context, so it cannot
// tell clusters apart. This plugin reuses its decision (CheckRequest) and
// upstream's object count evaluators, reading the quotas of the request's
// cluster and namespace from a wildcard informer.
package resourcequota

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	upstream "k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	quotav1 "k8s.io/apiserver/pkg/quota/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/quota"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// PluginName is the name of this admission plugin.
const PluginName = "shardplane.io/ResourceQuota"

// retries is how often a conflicting status update is checked again, as
// upstream.
const retries = 3

// Plugin enforces ResourceQuotas per logical cluster.
type Plugin struct {
	*admission.Handler
	quotas *wildcardinformer.Informer
	// quotasClient returns the quotas client of a cluster, once set.
	quotasClient atomic.Pointer[func(logicalcluster.Name) (corev1client.ResourceQuotasGetter, error)]

	// locks serialize the checks of one cluster, whose quotas they update
	// (a workspace-wide quota spans its namespaces).
	locks sync.Map // cluster -> *sync.Mutex
	// written holds the quotas this plugin updated until the informer has
	// caught up with them, so the next request does not count on a stale
	// status.
	written sync.Map // informer key -> *corev1.ResourceQuota
}

var _ admission.ValidationInterface = &Plugin{}

// New returns the plugin; quotas is a wildcard informer of ResourceQuotas.
// Call SetLoopback before serving.
func New(quotas *wildcardinformer.Informer) *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update), quotas: quotas}
}

// SetLoopback sets the configuration the plugin writes quota status with.
func (p *Plugin) SetLoopback(base *rest.Config) error {
	httpClient, err := rest.HTTPClientFor(base)
	if err != nil {
		return err
	}
	f := func(cluster logicalcluster.Name) (corev1client.ResourceQuotasGetter, error) {
		return corev1client.NewForConfigAndClient(kcpclient.ClusterConfig(base, cluster), httpClient)
	}
	p.quotasClient.Store(&f)
	return nil
}

// Validate refuses requests that exceed a quota of their namespace and
// charges the others to the quotas.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" || a.GetKind().GroupKind() == (schema.GroupKind{Kind: "Namespace"}) {
		return nil
	}
	gr := a.GetResource().GroupResource()
	if _, ignored := quota.IgnoredResources[gr]; ignored {
		return nil
	}
	cluster, ok := logicalcluster.ClusterFromContext(ctx)
	if !ok || cluster.IsWildcard() {
		return nil
	}
	evaluator := quota.CountEvaluator(gr, nil)
	if !evaluator.Handles(a) {
		return nil
	}
	objs := quota.Limiting(p.quotas, cluster, a.GetNamespace())
	if len(objs) == 0 {
		return nil
	}

	lock := p.lockFor(cluster)
	lock.Lock()
	defer lock.Unlock()
	quotas := p.current(cluster, objs)
	for attempt := 0; ; attempt++ {
		checked, err := upstream.CheckRequest(quotas, a, evaluator, nil)
		if err != nil || a.IsDryRun() {
			return err
		}
		var failed map[string]bool
		var lastErr error
		for i := range checked {
			if quotav1.Equals(quotas[i].Status.Used, checked[i].Status.Used) {
				continue
			}
			if err := p.updateStatus(ctx, cluster, &checked[i]); err != nil {
				if failed == nil {
					failed = map[string]bool{}
				}
				failed[checked[i].Namespace+"/"+checked[i].Name], lastErr = true, err
			}
		}
		if lastErr == nil {
			return nil
		}
		if attempt == retries {
			return lastErr
		}
		// Check the quotas whose update failed again, as they are now.
		var again []corev1.ResourceQuota
		for _, q := range quotas {
			if !failed[q.Namespace+"/"+q.Name] {
				continue
			}
			live, err := p.liveQuota(ctx, cluster, q.Namespace, q.Name)
			if apierrors.IsNotFound(err) {
				continue // removed meanwhile: it limits nothing any more
			}
			if err != nil {
				return lastErr
			}
			again = append(again, *live)
		}
		quotas = again
	}
}

func (p *Plugin) lockFor(cluster logicalcluster.Name) *sync.Mutex {
	l, _ := p.locks.LoadOrStore(cluster, &sync.Mutex{})
	return l.(*sync.Mutex)
}

// current returns copies of the quotas of the informer, replaced by the
// version this plugin wrote where the informer has not seen it yet.
func (p *Plugin) current(cluster logicalcluster.Name, objs []interface{}) []corev1.ResourceQuota {
	out := make([]corev1.ResourceQuota, 0, len(objs))
	for _, obj := range objs {
		q, ok := obj.(*corev1.ResourceQuota)
		if !ok {
			continue
		}
		key := wildcardinformer.Key(cluster, q.Namespace, q.Name)
		if w, ok := p.written.Load(key); ok {
			mine := w.(*corev1.ResourceQuota)
			if mine.UID == q.UID && newer(mine.ResourceVersion, q.ResourceVersion) {
				q = mine
			} else {
				p.written.Delete(key)
			}
		}
		out = append(out, *q.DeepCopy())
	}
	return out
}

// newer tells whether resource version a is after b; versions are etcd
// revisions, but are compared as opaque when they do not parse.
func newer(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x > y
}

func (p *Plugin) client(cluster logicalcluster.Name) (corev1client.ResourceQuotasGetter, error) {
	f := p.quotasClient.Load()
	if f == nil {
		return nil, fmt.Errorf("resource quota admission is not ready yet")
	}
	return (*f)(cluster)
}

func (p *Plugin) updateStatus(ctx context.Context, cluster logicalcluster.Name, q *corev1.ResourceQuota) error {
	client, err := p.client(cluster)
	if err != nil {
		return err
	}
	updated, err := client.ResourceQuotas(q.Namespace).UpdateStatus(ctx, q, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	p.written.Store(wildcardinformer.Key(cluster, updated.Namespace, updated.Name), updated)
	return nil
}

func (p *Plugin) liveQuota(ctx context.Context, cluster logicalcluster.Name, ns, name string) (*corev1.ResourceQuota, error) {
	client, err := p.client(cluster)
	if err != nil {
		return nil, err
	}
	return client.ResourceQuotas(ns).Get(ctx, name, metav1.GetOptions{})
}
