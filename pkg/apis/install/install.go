// Package install registers kcp's API groups in the scheme the shard serves
// and its clients decode with (legacyscheme, shared with the Kubernetes
// built-ins).
package install

import (
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	cachev1alpha1 "github.com/shardplane/shardplane/pkg/apis/cache/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	topologyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/topology/v1alpha1"
)

func init() {
	utilruntime.Must(corev1alpha1.Install(legacyscheme.Scheme))
	utilruntime.Must(tenancyv1alpha1.Install(legacyscheme.Scheme))
	utilruntime.Must(topologyv1alpha1.Install(legacyscheme.Scheme))
	utilruntime.Must(cachev1alpha1.Install(legacyscheme.Scheme))
	utilruntime.Must(apisv1alpha2.Install(legacyscheme.Scheme))
	utilruntime.Must(migrationv1alpha1.Install(legacyscheme.Scheme))
}
