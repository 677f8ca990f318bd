// Package policy runs the upstream ValidatingAdmissionPolicy and
// MutatingAdmissionPolicy plugins once per logical cluster: a policy and its
// bindings apply to requests in the logical cluster that holds them, and to
// requests on the resources other clusters bind from its APIExports, and
// their params are read from that cluster.
package policy

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/shardplane/shardplane/pkg/admission/percluster"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// NewValidating returns the ValidatingAdmissionPolicy plugin of all logical
// clusters.
func NewValidating(c percluster.Config) *percluster.Plugins {
	return newPlugins(c, validating.PluginName, func(i percluster.Informers) []*wildcardinformer.Informer {
		return []*wildcardinformer.Informer{i.ValidatingPolicies, i.ValidatingPolicyBindings}
	},
		func() (plugin, error) { return validating.NewPlugin(nil) })
}

// NewMutating returns the MutatingAdmissionPolicy plugin of all logical
// clusters.
func NewMutating(c percluster.Config) *percluster.Plugins {
	return newPlugins(c, mutating.PluginName, func(i percluster.Informers) []*wildcardinformer.Informer {
		return []*wildcardinformer.Informer{i.MutatingPolicies, i.MutatingPolicyBindings}
	},
		func() (plugin, error) {
			p, err := mutating.NewPlugin(nil)
			if err != nil {
				return nil, err
			}
			p.InspectFeatureGates(utilfeature.DefaultFeatureGate)
			return p, nil
		})
}

// plugin is what the validating and mutating policy plugins share: the
// upstream generic policy plugin's initialization.
type plugin interface {
	admission.Interface
	admission.InitializationValidator
	SetExternalKubeInformerFactory(informers.SharedInformerFactory)
	SetExternalKubeClientSet(kubernetes.Interface)
	SetDynamicClient(dynamic.Interface)
	SetRESTMapper(meta.RESTMapper)
	SetUnconditionalAuthorizer(authorizer.UnconditionalAuthorizer)
	SetDrainedNotification(<-chan struct{})
	SetExcludedAdmissionResources([]schema.GroupResource)
}

// newPlugins runs a policy plugin per logical cluster that holds policies
// and bindings, its clients, informers and params all pointed at that
// cluster (its policies and bindings, for a cluster another shard hosts,
// from the cache server). policiesAndBindings picks the informers of the
// kind.
func newPlugins(c percluster.Config, name string, policiesAndBindings func(percluster.Informers) []*wildcardinformer.Informer, build func() (plugin, error)) *percluster.Plugins {
	return c.NewPlugins(name,
		func(i percluster.Informers, cluster logicalcluster.Name) bool {
			return percluster.HasAll(cluster, policiesAndBindings(i)...)
		},
		func(ctx context.Context, cluster logicalcluster.Name) (admission.Interface, error) {
			p, err := build()
			if err != nil {
				return nil, err
			}
			clients, err := c.NewClusterClients(ctx, cluster)
			if err != nil {
				return nil, err
			}
			p.SetExternalKubeInformerFactory(clients.Informers)
			p.SetExternalKubeClientSet(clients.Kube)
			p.SetDynamicClient(clients.Dynamic)
			p.SetRESTMapper(clients.RESTMapper)
			p.SetUnconditionalAuthorizer(c.Authorizer)
			p.SetDrainedNotification(ctx.Done())
			p.SetExcludedAdmissionResources(percluster.ExcludedResources())
			if err := p.ValidateInitialization(); err != nil {
				return nil, fmt.Errorf("initialize %s of logical cluster %s: %w", name, cluster, err)
			}
			clients.Informers.Start(ctx.Done())
			return p, nil
		})
}
