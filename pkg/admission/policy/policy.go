// Package policy runs the upstream ValidatingAdmissionPolicy and
// MutatingAdmissionPolicy plugins once per logical cluster: a policy and its
// bindings apply to requests in the logical cluster that holds them, and
// their params are read from that cluster.
package policy

import (
	"context"
	"fmt"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	utilfeature "k8s.io/apiserver/pkg/util/feature"

	"github.com/kplane-dev/kplane/pkg/admission/percluster"
	"github.com/kplane-dev/kplane/pkg/logicalcluster"
)

// NewValidating returns the ValidatingAdmissionPolicy plugin of all logical
// clusters.
func NewValidating(c percluster.Config) *percluster.Plugins {
	policies, bindings := c.Informers.ValidatingPolicies, c.Informers.ValidatingPolicyBindings
	return percluster.New(validating.PluginName, c.Informers.All(),
		func(cluster logicalcluster.Name) bool { return percluster.HasAll(cluster, policies, bindings) },
		func(ctx context.Context, cluster logicalcluster.Name) (admission.Interface, error) {
			p, err := validating.NewPlugin(nil)
			if err != nil {
				return nil, err
			}
			clients, err := c.NewClusterClients(cluster)
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
				return nil, fmt.Errorf("initialize %s of logical cluster %s: %w", validating.PluginName, cluster, err)
			}
			clients.Informers.Start(ctx.Done())
			return p, nil
		})
}

// NewMutating returns the MutatingAdmissionPolicy plugin of all logical
// clusters.
func NewMutating(c percluster.Config) *percluster.Plugins {
	policies, bindings := c.Informers.MutatingPolicies, c.Informers.MutatingPolicyBindings
	return percluster.New(mutating.PluginName, c.Informers.All(),
		func(cluster logicalcluster.Name) bool { return percluster.HasAll(cluster, policies, bindings) },
		func(ctx context.Context, cluster logicalcluster.Name) (admission.Interface, error) {
			p, err := mutating.NewPlugin(nil)
			if err != nil {
				return nil, err
			}
			clients, err := c.NewClusterClients(cluster)
			if err != nil {
				return nil, err
			}
			p.InspectFeatureGates(utilfeature.DefaultFeatureGate)
			p.SetExternalKubeInformerFactory(clients.Informers)
			p.SetExternalKubeClientSet(clients.Kube)
			p.SetDynamicClient(clients.Dynamic)
			p.SetRESTMapper(clients.RESTMapper)
			p.SetUnconditionalAuthorizer(c.Authorizer)
			p.SetDrainedNotification(ctx.Done())
			p.SetExcludedAdmissionResources(percluster.ExcludedResources())
			if err := p.ValidateInitialization(); err != nil {
				return nil, fmt.Errorf("initialize %s of logical cluster %s: %w", mutating.PluginName, cluster, err)
			}
			clients.Informers.Start(ctx.Done())
			return p, nil
		})
}
