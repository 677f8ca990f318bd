package bootstrap

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// SystemNamespaces are the namespaces every shard has in its system:admin
// cluster, as kube-apiserver has them: its own controllers keep leases in
// kube-system.
var SystemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, "kube-node-lease"}
