package bootstrap

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// SystemNamespaces are the namespaces every shard has in its system:admin
// cluster, as kube-apiserver has them: its own controllers keep leases in
// kube-system.
var SystemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, "kube-node-lease"}

// SystemAdmin bootstraps, through loopback clients, what a shard that does
// not host root needs in its system:admin cluster: the kcp ClusterRoles
// every logical cluster may bind, which root's bindings name too (root's
// shard creates them as part of Root).
func SystemAdmin(ctx context.Context, loopback *rest.Config) error {
	return systemAdminRBAC(ctx, loopback)
}
