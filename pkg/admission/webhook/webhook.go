// Package webhook runs the upstream validating and mutating admission
// webhook plugins once per logical cluster: a webhook configuration applies
// to requests in the logical cluster that holds it, and, as in kcp, to
// requests on the resources other clusters bind from its APIExports.
package webhook

import (
	"context"
	"fmt"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	utilfeature "k8s.io/apiserver/pkg/util/feature"

	"github.com/shardplane/shardplane/pkg/admission/percluster"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// NewValidating returns the ValidatingAdmissionWebhook plugin of all logical
// clusters.
func NewValidating(c percluster.Config) *percluster.Plugins {
	return c.NewPlugins(validating.PluginName,
		func(i percluster.Informers, cluster logicalcluster.Name) bool {
			return percluster.HasAll(cluster, i.ValidatingWebhooks)
		},
		func(ctx context.Context, cluster logicalcluster.Name) (admission.Interface, error) {
			p, err := validating.NewValidatingAdmissionWebhook(nil)
			if err != nil {
				return nil, err
			}
			return p, initialize(ctx, c, cluster, p.Webhook)
		})
}

// NewMutating returns the MutatingAdmissionWebhook plugin of all logical
// clusters.
func NewMutating(c percluster.Config) *percluster.Plugins {
	return c.NewPlugins(mutating.PluginName,
		func(i percluster.Informers, cluster logicalcluster.Name) bool {
			return percluster.HasAll(cluster, i.MutatingWebhooks)
		},
		func(ctx context.Context, cluster logicalcluster.Name) (admission.Interface, error) {
			p, err := mutating.NewMutatingWebhook(nil)
			if err != nil {
				return nil, err
			}
			return p, initialize(ctx, c, cluster, p.Webhook)
		})
}

// initialize does what kube-apiserver's plugin initializers do, with clients
// and informers of one logical cluster, and starts the informers.
func initialize(ctx context.Context, c percluster.Config, cluster logicalcluster.Name, w *generic.Webhook) error {
	clients, err := c.NewClusterClients(ctx, cluster)
	if err != nil {
		return err
	}
	w.SetExternalKubeClientSet(clients.Kube)
	w.SetExternalKubeInformerFactory(clients.Informers)
	w.SetDrainedNotification(ctx.Done())
	w.SetExcludedAdmissionResources(percluster.ExcludedResources())
	w.InspectFeatureGates(utilfeature.DefaultFeatureGate)
	if err := w.ValidateInitialization(); err != nil {
		return fmt.Errorf("initialize webhook plugin of logical cluster %s: %w", cluster, err)
	}
	clients.Informers.Start(ctx.Done())
	return nil
}
