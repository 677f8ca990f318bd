// Package admissionpolicystatus fills status.typeChecking of
// ValidatingAdmissionPolicies in every logical cluster: the expressions are
// type-checked against the schemas of the policy's own cluster (custom
// resources included), as kube-controller-manager's
// validatingadmissionpolicy-status controller does for one cluster.
package admissionpolicystatus

import (
	"context"
	"fmt"
	"net/http"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	applyv1 "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// ControllerName is the field manager of the status it writes, as upstream.
const ControllerName = "validatingadmissionpolicy-status"

// Controller type-checks changed policies of all logical clusters.
type Controller struct {
	loop *loop.Loop
}

// Config is what the controller needs.
type Config struct {
	// Policies is the wildcard informer of ValidatingAdmissionPolicies.
	Policies *wildcardinformer.Informer
	// Loopback reaches the shard as system:masters.
	Loopback *rest.Config
}

// New returns the controller.
func New(cfg Config) (*Controller, error) {
	policies, loopback := cfg.Policies, cfg.Loopback
	httpClient, err := rest.HTTPClientFor(loopback)
	if err != nil {
		return nil, err
	}
	clients := clusterClients{loopback: loopback, httpClient: httpClient}
	r := reconciler{
		getPolicy: func(cluster logicalcluster.Name, name string) (*admissionregistrationv1.ValidatingAdmissionPolicy, error) {
			obj, exists, err := policies.Get(cluster, "", name)
			if err != nil || !exists {
				return nil, err
			}
			return obj.(*admissionregistrationv1.ValidatingAdmissionPolicy), nil
		},
		typeCheck: func(cluster logicalcluster.Name, policy *admissionregistrationv1.ValidatingAdmissionPolicy) ([]admissionregistrationv1.ExpressionWarning, error) {
			client, err := clients.get(cluster)
			if err != nil {
				return nil, err
			}
			checker := &validating.TypeChecker{
				SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: client.Discovery()},
				RestMapper:     restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery())),
			}
			return checker.Check(policy), nil
		},
		applyStatus: func(ctx context.Context, cluster logicalcluster.Name, status *applyv1.ValidatingAdmissionPolicyApplyConfiguration) error {
			client, err := clients.get(cluster)
			if err != nil {
				return err
			}
			_, err = client.AdmissionregistrationV1().ValidatingAdmissionPolicies().ApplyStatus(ctx, status, metav1.ApplyOptions{FieldManager: ControllerName, Force: true})
			return err
		},
	}
	c := &Controller{loop: loop.New(ControllerName, r.reconcile)}
	policies.AddHandler(c.loop.Handler(nil))
	return c, nil
}

// Run processes policies with the given number of workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers) }

// clusterClients builds clients of one logical cluster over one shared
// connection pool.
type clusterClients struct {
	loopback   *rest.Config
	httpClient *http.Client
}

func (c clusterClients) get(cluster logicalcluster.Name) (kubernetes.Interface, error) {
	client, err := kubernetes.NewForConfigAndClient(kcpclient.ClusterConfig(c.loopback, cluster), c.httpClient)
	if err != nil {
		return nil, fmt.Errorf("client of logical cluster %s: %w", cluster, err)
	}
	return client, nil
}
