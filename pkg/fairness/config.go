package fairness

import (
	"context"
	"fmt"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/apiserver/pkg/authentication/user"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	flowcontrolclient "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/registry/flowcontrol/ensurer"
	"k8s.io/utils/ptr"

	"github.com/shardplane/shardplane/pkg/identities"
	"github.com/shardplane/shardplane/pkg/kcpclient"
)

// The shard's own FlowSchemas and PriorityLevelConfigurations, beside
// upstream's mandatory exempt and catch-all and its probes schema.
const (
	// WorkspacesPriorityLevel serves every tenant, in flows of workspace and
	// user (WorkspacesFlowSchema).
	WorkspacesPriorityLevel = "workspaces"
	WorkspacesFlowSchema    = "workspaces"
	// SystemFlowSchema puts the system's identities other than
	// system:masters (exempt) into upstream's "system" priority level.
	SystemFlowSchema = "shardplane-system"
)

// priorityLevels and flowSchemas are the suggested configuration: kept in
// place while they carry apf.kubernetes.io/autoupdate-spec: "true", left
// to the operator once it is "false".
var (
	priorityLevels = []*flowcontrolv1.PriorityLevelConfiguration{
		bootstrap.SuggestedPriorityLevelConfigurationSystem,
		{
			ObjectMeta: metav1.ObjectMeta{Name: WorkspacesPriorityLevel, Annotations: map[string]string{flowcontrolv1.AutoUpdateAnnotationKey: "true"}},
			Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
				Type: flowcontrolv1.PriorityLevelEnablementLimited,
				Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
					NominalConcurrencyShares: ptr.To(int32(100)),
					LendablePercent:          ptr.To(int32(50)),
					LimitResponse: flowcontrolv1.LimitResponse{
						Type:    flowcontrolv1.LimitResponseTypeQueue,
						Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 128, HandSize: 6, QueueLengthLimit: 50},
					},
				},
			},
		},
	}
	flowSchemas = []*flowcontrolv1.FlowSchema{
		bootstrap.SuggestedFlowSchemaProbes,
		flowSchema(SystemFlowSchema, bootstrap.SuggestedPriorityLevelConfigurationSystem.Name, 500, identities.SystemGroups...),
		flowSchema(WorkspacesFlowSchema, WorkspacesPriorityLevel, 9000, user.AllAuthenticated, user.AllUnauthenticated),
	}
)

// flowSchema matches every request of the groups, distinguished by user.
func flowSchema(name, level string, precedence int32, groups ...string) *flowcontrolv1.FlowSchema {
	subjects := make([]flowcontrolv1.Subject, 0, len(groups))
	for _, g := range groups {
		subjects = append(subjects, flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: g}})
	}
	return &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{flowcontrolv1.AutoUpdateAnnotationKey: "true"}},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level},
			MatchingPrecedence:         precedence,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: subjects,
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs: []string{flowcontrolv1.VerbAll}, APIGroups: []string{flowcontrolv1.APIGroupAll}, Resources: []string{flowcontrolv1.ResourceAll},
					Namespaces: []string{flowcontrolv1.NamespaceEvery}, ClusterScope: true,
				}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{flowcontrolv1.VerbAll}, NonResourceURLs: []string{flowcontrolv1.NonResourceAll}}},
			}},
		},
	}
}

// Controller is a shard's API Priority and Fairness: the APF controller
// reading the configuration of ConfigCluster, keyed by workspace.
type Controller struct {
	// Interface is what the handler chain's APF filter calls.
	Interface utilflowcontrol.Interface

	informers informers.SharedInformerFactory
	client    flowcontrolclient.FlowcontrolV1Interface
}

// New returns the controller for a shard reached by loopback (as
// system:masters), sharing serverConcurrencyLimit seats among the levels,
// pricing tenants' LISTs by lists (see ByWorkspace).
func New(loopback *rest.Config, serverConcurrencyLimit int, lists ListSizes) (*Controller, error) {
	cs, err := kubernetes.NewForConfig(kcpclient.ClusterConfig(loopback, ConfigCluster))
	if err != nil {
		return nil, fmt.Errorf("client of %s: %w", ConfigCluster, err)
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	apf := utilflowcontrol.New(factory, cs.FlowcontrolV1(), serverConcurrencyLimit)
	return &Controller{Interface: ByWorkspace(apf, lists), informers: factory, client: cs.FlowcontrolV1()}, nil
}

// Start runs the informers of the configuration and keeps the shard's
// configuration in place until ctx ends: written once the informers have
// synced, then checked every minute (an operator's edits of objects marked
// apf.kubernetes.io/autoupdate-spec: "false" stay).
func (c *Controller) Start(ctx context.Context) {
	c.informers.Start(ctx.Done())
	go func() {
		fs := c.informers.Flowcontrol().V1().FlowSchemas()
		pl := c.informers.Flowcontrol().V1().PriorityLevelConfigurations()
		if !cache.WaitForCacheSync(ctx.Done(), fs.Informer().HasSynced, pl.Informer().HasSynced) {
			return
		}
		fsOps := ensurer.NewFlowSchemaOps(c.client.FlowSchemas(), fs.Lister())
		plOps := ensurer.NewPriorityLevelConfigurationOps(c.client.PriorityLevelConfigurations(), pl.Lister())
		ensure := func(ctx context.Context) error {
			if err := ensurer.EnsureConfigurations(ctx, plOps, priorityLevels, ensurer.NewSuggestedEnsureStrategy[*flowcontrolv1.PriorityLevelConfiguration]()); err != nil {
				return err
			}
			if err := ensurer.EnsureConfigurations(ctx, fsOps, flowSchemas, ensurer.NewSuggestedEnsureStrategy[*flowcontrolv1.FlowSchema]()); err != nil {
				return err
			}
			if err := ensurer.EnsureConfigurations(ctx, plOps, bootstrap.MandatoryPriorityLevelConfigurations, ensurer.NewMandatoryEnsureStrategy[*flowcontrolv1.PriorityLevelConfiguration]()); err != nil {
				return err
			}
			if err := ensurer.EnsureConfigurations(ctx, fsOps, bootstrap.MandatoryFlowSchemas, ensurer.NewMandatoryEnsureStrategy[*flowcontrolv1.FlowSchema]()); err != nil {
				return err
			}
			// Objects an earlier version of the configuration had.
			if err := ensurer.RemoveUnwantedObjects(ctx, fsOps, append(append([]*flowcontrolv1.FlowSchema{}, flowSchemas...), bootstrap.MandatoryFlowSchemas...)); err != nil {
				return err
			}
			return ensurer.RemoveUnwantedObjects(ctx, plOps, append(append([]*flowcontrolv1.PriorityLevelConfiguration{}, priorityLevels...), bootstrap.MandatoryPriorityLevelConfigurations...))
		}
		_ = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
			if err := ensure(ctx); err != nil {
				klog.FromContext(ctx).Error(err, "Writing the priority and fairness configuration, will retry")
				return false, nil
			}
			return true, nil
		})
		wait.UntilWithContext(ctx, func(ctx context.Context) {
			if err := ensure(ctx); err != nil {
				klog.FromContext(ctx).Error(err, "Keeping the priority and fairness configuration, will retry")
			}
		}, time.Minute)
	}()
}
