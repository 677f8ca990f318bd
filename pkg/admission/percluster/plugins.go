// Package percluster runs upstream admission plugins that cache their
// configuration (webhooks, admission policies) once per logical cluster.
//
// The upstream plugins read one configuration for the whole server. Here each
// logical cluster that holds configuration gets its own plugin instance, fed
// by informers of that cluster only, and a request is dispatched to the
// instance of the cluster it addresses. A cluster without configuration gets
// no instance, informers or goroutines; an instance is dropped when its
// cluster's last configuration object goes away.
package percluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/klog/v2"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// Factory builds the plugin of one logical cluster. Its informers and
// goroutines must stop when ctx is done.
type Factory func(ctx context.Context, cluster logicalcluster.Name) (admission.Interface, error)

// syncTimeout bounds how long a request waits for the configuration
// informers after start-up, like upstream's admission.Handler.WaitForReady.
const syncTimeout = 10 * time.Second

// Plugins is an admission plugin that keeps one upstream plugin per logical
// cluster with configuration and dispatches each request to its cluster's.
type Plugins struct {
	name string
	// configured tells whether a cluster has configuration for the plugin.
	configured func(logicalcluster.Name) bool
	informers  []*wildcardinformer.Informer
	newPlugin  Factory
	// source picks the cluster whose instance judges a request; nil: the
	// request's.
	source func(logicalcluster.Name, schema.GroupResource) logicalcluster.Name
	// replicas hold the configuration of clusters remote says other shards
	// host; they are not waited for: a shard serves without the cache.
	replicas []*wildcardinformer.Informer
	remote   func(logicalcluster.Name) bool

	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.RWMutex
	instances map[instanceKey]*instance
}

// instanceKey names an instance: the cluster whose configuration it holds,
// and whether it judges other clusters' requests (an APIExport's, for its
// bound resources), which must not see that cluster's namespaces.
type instanceKey struct {
	cluster logicalcluster.Name
	foreign bool
}

type foreignKey struct{}

// Foreign tells a Factory that the instance it builds judges requests of
// other clusters: the namespaces of the objects it judges are not its
// cluster's (NewClusterClients then reads them from the request's).
func Foreign(ctx context.Context) bool {
	f, _ := ctx.Value(foreignKey{}).(bool)
	return f
}

type instance struct {
	plugin admission.Interface
	cancel context.CancelFunc
}

var (
	_ admission.MutationInterface   = &Plugins{}
	_ admission.ValidationInterface = &Plugins{}
)

// New returns a plugin named name whose per-cluster instances come from
// newPlugin. A cluster has configuration when configured says so; informers
// are the wildcard informers configured reads: their deletions drop idle
// instances.
func New(name string, informers []*wildcardinformer.Informer, configured func(logicalcluster.Name) bool, newPlugin Factory) *Plugins {
	ctx, cancel := context.WithCancel(context.Background())
	p := &Plugins{
		name:       name,
		configured: configured,
		informers:  informers,
		newPlugin:  newPlugin,
		ctx:        ctx,
		cancel:     cancel,
		instances:  map[instanceKey]*instance{},
	}
	for _, inf := range informers {
		inf.AddHandler(idleDropper{p})
	}
	return p
}

// NewPlugins returns a plugin named name whose instances come from
// newPlugin, for the clusters configured says have configuration in the
// informers that hold theirs (Config.InformersOf), with c's source
// clusters.
func (c Config) NewPlugins(name string, configured func(Informers, logicalcluster.Name) bool, newPlugin Factory) *Plugins {
	p := New(name, c.Informers.All(), func(cluster logicalcluster.Name) bool {
		return configured(c.InformersOf(cluster), cluster)
	}, newPlugin).WithSourceCluster(c.SourceCluster)
	if c.Replicas != nil {
		p.replicas, p.remote = c.Replicas.All(), c.remote
		for _, inf := range p.replicas {
			inf.AddHandler(idleDropper{p})
		}
	}
	return p
}

// WithSourceCluster makes the instance of source(cluster, resource) judge
// a request on resource in cluster, and returns p. Call before use.
func (p *Plugins) WithSourceCluster(source func(logicalcluster.Name, schema.GroupResource) logicalcluster.Name) *Plugins {
	p.source = source
	return p
}

// Run stops every instance when ctx is done.
func (p *Plugins) Run(ctx context.Context) {
	<-ctx.Done()
	p.cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, inst := range p.instances {
		inst.cancel()
		delete(p.instances, key)
	}
}

// Handles returns true: the cluster's instance decides.
func (p *Plugins) Handles(admission.Operation) bool { return true }

// Admit runs the mutating plugin of the request's cluster.
func (p *Plugins) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	plugin, err := p.pluginFor(ctx, a)
	if plugin == nil || err != nil {
		return err
	}
	m, ok := plugin.(admission.MutationInterface)
	if !ok || !m.Handles(a.GetOperation()) {
		return nil
	}
	return m.Admit(ctx, a, o)
}

// Validate runs the validating plugin of the request's cluster.
func (p *Plugins) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	plugin, err := p.pluginFor(ctx, a)
	if plugin == nil || err != nil {
		return err
	}
	v, ok := plugin.(admission.ValidationInterface)
	if !ok || !v.Handles(a.GetOperation()) {
		return nil
	}
	return v.Validate(ctx, a, o)
}

// Instances returns the number of clusters that have an instance.
func (p *Plugins) Instances() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.instances)
}

// pluginFor returns the instance of the cluster whose configuration judges
// the request (the request's, or for a bound resource its APIExport's), or
// nil when that cluster has no configuration.
func (p *Plugins) pluginFor(ctx context.Context, a admission.Attributes) (admission.Interface, error) {
	cluster, ok := logicalcluster.ClusterFromContext(ctx)
	if !ok || cluster.IsWildcard() {
		return nil, nil
	}
	if !p.waitForInformers(ctx) {
		return nil, admission.NewForbidden(a, fmt.Errorf("%s: admission configuration not loaded yet, retry", p.name))
	}
	source := cluster
	if p.source != nil {
		source = p.source(cluster, a.GetResource().GroupResource())
	}
	if !p.configured(source) {
		if p.remote != nil && p.remote(source) && !wildcardinformer.Synced(p.replicas...) {
			// Admitting now would skip the export's webhooks and policies.
			return nil, admission.NewForbidden(a, fmt.Errorf("%s: the admission configuration of the APIExport's workspace is not loaded from the cache server yet, retry", p.name))
		}
		// An instance built while the last configuration was being deleted.
		if p.has(source) {
			p.drop(source)
		}
		return nil, nil
	}
	plugin, err := p.instance(instanceKey{cluster: source, foreign: source != cluster})
	if err != nil {
		klog.FromContext(ctx).Error(err, "Building admission plugin failed", "plugin", p.name, "cluster", source)
		return nil, admission.NewForbidden(a, fmt.Errorf("%s: the admission configuration of this logical cluster cannot be loaded, retry", p.name))
	}
	annotateCluster(a, cluster)
	return plugin, nil
}

// annotateCluster shows webhooks and policies the logical cluster of an
// object being created, as kcp does: storage sets the same annotation on
// write, so this changes nothing that is stored.
func annotateCluster(a admission.Attributes, cluster logicalcluster.Name) {
	if a.GetOperation() != admission.Create || a.GetObject() == nil {
		return
	}
	m, err := meta.Accessor(a.GetObject())
	if err != nil {
		return
	}
	annotations := m.GetAnnotations()
	if annotations[logicalcluster.AnnotationKey] == string(cluster) {
		return
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[logicalcluster.AnnotationKey] = string(cluster)
	m.SetAnnotations(annotations)
}

func (p *Plugins) waitForInformers(ctx context.Context) bool {
	if wildcardinformer.Synced(p.informers...) {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	return wildcardinformer.WaitForSync(ctx, p.informers...) == nil
}

func (p *Plugins) has(cluster logicalcluster.Name) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, foreign := range []bool{false, true} {
		if _, ok := p.instances[instanceKey{cluster, foreign}]; ok {
			return true
		}
	}
	return false
}

func (p *Plugins) instance(key instanceKey) (admission.Interface, error) {
	p.mu.RLock()
	inst, ok := p.instances[key]
	p.mu.RUnlock()
	if ok {
		return inst.plugin, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if inst, ok := p.instances[key]; ok {
		return inst.plugin, nil
	}
	if p.ctx.Err() != nil {
		return nil, p.ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.WithValue(p.ctx, foreignKey{}, key.foreign))
	plugin, err := p.newPlugin(ctx, key.cluster)
	if err != nil {
		cancel()
		return nil, err
	}
	p.instances[key] = &instance{plugin: plugin, cancel: cancel}
	klog.Background().V(2).Info("Started admission plugin for logical cluster", "plugin", p.name, "cluster", key.cluster, "foreign", key.foreign)
	return plugin, nil
}

// drop stops the instances of a cluster that has no configuration left.
func (p *Plugins) drop(cluster logicalcluster.Name) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.configured(cluster) {
		return
	}
	for _, foreign := range []bool{false, true} {
		key := instanceKey{cluster, foreign}
		if inst, ok := p.instances[key]; ok {
			inst.cancel()
			delete(p.instances, key)
			klog.Background().V(2).Info("Stopped admission plugin of logical cluster without configuration", "plugin", p.name, "cluster", cluster, "foreign", foreign)
		}
	}
}

// idleDropper drops the instance of a cluster whose last configuration
// object was deleted.
type idleDropper struct{ p *Plugins }

func (d idleDropper) OnAdd(interface{})                 {}
func (d idleDropper) OnUpdate(interface{}, interface{}) {}
func (d idleDropper) OnDelete(obj interface{}) {
	key, err := wildcardinformer.KeyFunc(obj)
	if err != nil {
		return
	}
	if cluster, _, _, ok := wildcardinformer.SplitKey(key); ok {
		d.p.drop(cluster)
	}
}

// Reinvoking chains mutating plugins and runs the chain a second time when a
// plugin asks for it (a webhook with reinvocationPolicy IfNeeded), as
// kube-apiserver's admission chain does.
func Reinvoking(plugins ...admission.Interface) admission.MutationInterface {
	return reinvoker{admission.NewChainHandler(plugins...)}
}

type reinvoker struct{ chain chain }

// chain is what admission.NewChainHandler returns.
type chain interface {
	admission.MutationInterface
	admission.ValidationInterface
}

func (r reinvoker) Handles(op admission.Operation) bool { return r.chain.Handles(op) }

func (r reinvoker) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if err := r.chain.Admit(ctx, a, o); err != nil {
		return err
	}
	if s := a.GetReinvocationContext(); s != nil && s.ShouldReinvoke() {
		s.SetIsReinvoke()
		return r.chain.Admit(ctx, a, o)
	}
	return nil
}
