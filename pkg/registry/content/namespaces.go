package content

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/kplane-dev/kplane/pkg/logicalcluster"
)

// CreateNamespaces creates namespaces in a logical cluster in-process,
// leaving existing ones alone. The shard creates the namespaces of its own
// system clusters with it before it serves, so that its controllers (the
// apiserver identity lease in kube-system) find them on their first try
// instead of racing the system namespaces controller.
func (d *Deleter) CreateNamespaces(ctx context.Context, cluster logicalcluster.Name, names ...string) error {
	ctx = logicalcluster.WithCluster(genericapirequest.WithNamespace(ctx, ""), cluster)
	// Create validation reads what is being created from the request info.
	ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: "create", APIVersion: "v1", Resource: "namespaces",
	})
	for _, name := range names {
		ns := &api.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := d.namespaceCreater.Create(ctx, ns, rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil && !isAlreadyExists(err) {
			return fmt.Errorf("create namespace %s in %s: %w", name, cluster, err)
		}
	}
	return nil
}
